"""A corpus of realistic secrets as people paste them into Markdown notes, and a leak check.

Each `Case` is a snippet (as it would sit in a note, a ledger item or a plan) and the secret
values in it. The values are generated from a fixed seed in each format's real shape and
length (a Stripe key is ~107 characters, an OpenAI project key ~164), so no real credential is
in the repository and the strings still look random to every detector.

`leaks(secret, text)` is the check every channel is held to: no run of `WINDOW` characters of
the secret may survive (the whole secret when it is shorter), compared case-insensitively,
because the lexical index stores lowercased terms.
"""

from __future__ import annotations

import base64
import random
import string
from dataclasses import dataclass

WINDOW = 8
ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"

_random = random.Random(20261130)


def _draw(alphabet: str, length: int) -> str:
    """Given an alphabet and a length, return a random string that holds a digit, an upper-
    and a lowercase letter whenever the alphabet has them (real keys do)."""
    while True:
        value = "".join(_random.choice(alphabet) for _ in range(length))
        classes = [
            any(c.isdigit() for c in value) or not any(c.isdigit() for c in alphabet),
            any(c.isupper() for c in value) or not any(c.isupper() for c in alphabet),
            any(c.islower() for c in value) or not any(c.islower() for c in alphabet),
        ]
        if all(classes):
            return value


def _password(length: int = 14) -> str:
    return _draw(ALNUM, length - 2) + _random.choice("!#%^*") + _random.choice(string.digits)


def _pem_body(lines: int, width: int = 64) -> str:
    return "\n".join(_draw(B64, width) for _ in range(lines))


@dataclass(frozen=True)
class Case:
    """One snippet and the secret values in it that must not survive anywhere."""

    id: str
    text: str
    secrets: tuple[str, ...]
    label: str  # a few plain words naming the case (recall queries use them, never secrets)


def leaks(secret: str, text: str) -> str | None:
    """Given a secret and an output, return the first piece of the secret found in the output
    (None: nothing of it survived)."""
    haystack = text.lower()
    needle = secret.lower()
    if len(needle) <= WINDOW:
        return secret if needle in haystack else None
    for start in range(len(needle) - WINDOW + 1):
        piece = needle[start : start + WINDOW]
        if piece in haystack:
            return secret[start : start + WINDOW]
    return None


def _cases() -> list[Case]:
    cases: list[Case] = []

    def add(case_id: str, label: str, text: str, *secrets: str) -> None:
        cases.append(Case(case_id, text, secrets, label))

    # -- prefix tokens -----------------------------------------------------------------------
    value = "AKIA" + _draw(UPPER_DIGITS, 16)
    add("aws-access-key-id", "aws access key", f"CI uses access key `{value}` for uploads.", value)
    value = _draw(B64, 40)
    add(
        "aws-secret-env",
        "aws secret env",
        f"export AWS_SECRET_ACCESS_KEY={value}",
        value,
    )
    key, secret = "AKIA" + _draw(UPPER_DIGITS, 16), _draw(B64, 40)
    add(
        "aws-credentials-ini",
        "aws credentials file",
        f"[prod]\naws_access_key_id = {key}\naws_secret_access_key = {secret}",
        key,
        secret,
    )
    value = "ghp_" + _draw(ALNUM, 36)
    add("github-classic", "github token push", f"Pushed the release with {value} (rotate!).", value)
    value = "github_pat_" + _draw(ALNUM, 22) + "_" + _draw(ALNUM, 59)
    add("github-fine-grained", "github fine grained", f"fine-grained PAT: {value}", value)
    value = "glpat-" + _draw(URLSAFE, 20)
    add("gitlab-pat", "gitlab personal token", f"GitLab token {value} expires in May.", value)
    value = "xoxb-" + _draw(string.digits, 12) + "-" + _draw(string.digits, 13) + "-"
    value += _draw(ALNUM, 24)
    add("slack-bot", "slack bot token", f"slack bot: {value}", value)
    path = "T" + _draw(UPPER_DIGITS, 8) + "/B" + _draw(UPPER_DIGITS, 10) + "/" + _draw(ALNUM, 24)
    add(
        "slack-webhook",
        "slack webhook alerts",
        f"Alerts post to https://hooks.slack.com/services/{path}",
        path,
    )
    value = "sk_live_51" + _draw(ALNUM, 97)
    add("stripe-live-long", "stripe live key", f"Stripe live key: {value}", value)
    value = "sk_test_51" + _draw(ALNUM, 97)
    add("stripe-test-long", "stripe test key", f"stripe test mode uses {value} locally", value)
    value = "rk_live_51" + _draw(ALNUM, 97)
    add("stripe-restricted", "stripe restricted key", f"restricted key {value} for reports", value)
    value = "whsec_" + _draw(ALNUM, 32)
    add("stripe-webhook-secret", "stripe webhook signing", f"signing secret is {value}", value)
    value = "sk-proj-" + _draw(URLSAFE, 156)
    add("openai-project", "openai project key", f"OPENAI_API_KEY={value}", value)
    value = "sk-ant-api03-" + _draw(URLSAFE, 93) + "AA"
    add("anthropic", "anthropic api key", f"Claude key: {value}", value)
    value = "AIza" + _draw(URLSAFE, 35)
    add("google-api", "google maps key", f"maps key AIza…: {value}", value)
    value = "hf_" + _draw(ALNUM, 34)
    add("huggingface", "hugging face token", f"huggingface-cli login --token {value}", value)
    value = "npm_" + _draw(ALNUM, 36)
    add(
        "npmrc",
        "npm registry auth",
        f"//registry.npmjs.org/:_authToken={value}",
        value,
    )
    value = "pypi-AgEIcHlwaS5vcmc" + _draw(URLSAFE, 140)
    add("pypi", "pypi upload token", f"twine upload -u __token__ -p {value} dist/*", value)
    value = "SG." + _draw(URLSAFE, 22) + "." + _draw(URLSAFE, 43)
    add("sendgrid", "sendgrid mail key", f"SendGrid: {value}", value)
    value = "SK" + _draw(HEX, 32)
    add("twilio", "twilio api key", f"twilio api key sid {value}", value)
    value = (
        _random.choice("MN") + _draw(ALNUM, 23) + "." + _draw(URLSAFE, 6) + "." + _draw(URLSAFE, 27)
    )
    add("discord-bot", "discord bot token", f"discord bot token {value}", value)
    path = _draw(string.digits, 18) + "/" + _draw(URLSAFE, 68)
    add(
        "discord-webhook",
        "discord webhook deploys",
        f"Deploy notices go to https://discord.com/api/webhooks/{path}",
        path,
    )
    value = _draw(string.digits, 10) + ":AA" + _draw(URLSAFE, 33)
    add("telegram", "telegram bot", f"Telegram bot token: {value}", value)
    value = _draw(HEX, 32) + "-us21"
    add("mailchimp", "mailchimp api", f"mailchimp {value}", value)
    value = "sq0csp-" + _draw(URLSAFE, 43)
    add("square", "square oauth secret", f"square oauth secret {value}", value)
    value = "dop_v1_" + _draw(HEX, 64)
    add("digitalocean", "digitalocean token", f"doctl auth init -t {value}", value)
    value = "shpat_" + _draw(HEX, 32)
    add("shopify", "shopify admin token", f"Shopify admin API: {value}", value)
    value = base64.b64encode(_random.randbytes(64)).decode()
    add(
        "azure-storage",
        "azure storage connection",
        "DefaultEndpointsProtocol=https;AccountName=shopassets;"
        f"AccountKey={value};EndpointSuffix=core.windows.net",
        value,
    )

    # -- URLs with credentials ----------------------------------------------------------------
    value = _password()
    add(
        "postgres-url",
        "postgres database url",
        f"DATABASE_URL=postgres://app:{value}@db.internal:5432/shop",
        value,
    )
    value = _draw(ALNUM, 24)
    add(
        "redis-empty-user",
        "redis cache url",
        f"cache at redis://:{value}@cache.internal:6379/0",
        value,
    )
    value = _draw(ALNUM, 16)
    add(
        "mongodb-srv",
        "mongodb atlas cluster",
        f"mongodb+srv://admin:{value}@cluster0.ab1cd.mongodb.net/?retryWrites=true",
        value,
    )
    value = _draw(ALNUM, 20)
    add(
        "git-https",
        "git clone deploy",
        f"git clone https://deploy:{value}@git.example.com/shop.git",
        value,
    )
    value = "glpat-" + _draw(URLSAFE, 20)
    add(
        "git-oauth2",
        "gitlab oauth2 clone",
        f"git remote set-url origin https://oauth2:{value}@gitlab.com/acme/shop.git",
        value,
    )
    value = _draw(ALNUM, 18)
    add("amqp", "rabbitmq broker", f"broker: amqp://guest:{value}@rabbit:5672//", value)
    value = _draw(ALNUM, 32)
    add(
        "query-token",
        "export url token",
        f"Export: https://api.example.com/v1/export?format=csv&access_token={value}",
        value,
    )

    # -- .env key=value -------------------------------------------------------------------------
    value = _password()
    add("env-db-pass", "db pass env", f"DB_PASS={value}", value)
    value = _password()
    add("env-pwd", "pwd setting", f"pwd={value}", value)
    value = _password()
    add("env-mysql-root", "mysql root password", f"MYSQL_ROOT_PASSWORD={value}", value)
    value = _draw(URLSAFE, 50)
    add("env-django-secret", "django secret key", f"SECRET_KEY='{value}'", value)
    value = _draw(ALNUM, 48)
    add("env-jwt-secret", "jwt signing secret", f"JWT_SECRET={value}", value)
    value = _password()
    add("env-smtp-pass", "smtp pass", f"SMTP_USER=mailer\nSMTP_PASS={value}", value)
    value = _draw(HEX, 8) + "-" + _draw(HEX, 4) + "-" + _draw(HEX, 4) + "-" + _draw(HEX, 4)
    value += "-" + _draw(HEX, 12)
    add("env-heroku", "heroku api key", f"HEROKU_API_KEY={value}", value)

    # -- YAML, JSON, TOML ----------------------------------------------------------------------
    value = _password()
    add(
        "yaml-password",
        "yaml database password",
        f"```yaml\ndatabase:\n  user: shop\n  password: {value}\n  host: db\n```",
        value,
    )
    value = _draw(URLSAFE, 40)
    add("yaml-client-secret", "oauth client secret", f"oauth:\n  client_secret: {value}", value)
    value = _draw(ALNUM, 32)
    add("yaml-api-key-quoted", "yaml api key", f'sentry:\n  api_key: "{value}"', value)
    value = _password()
    add("json-password", "json password", f'{{"user": "svc", "password": "{value}"}}', value)
    value = _draw(ALNUM, 40)
    add("json-apikey-camel", "json apiKey", f'const config = {{ apiKey: "{value}" }};', value)
    body = _draw(B64, 64) + "\\n" + _draw(B64, 64) + "\\n" + _draw(B64, 40)
    add(
        "json-service-account",
        "gcp service account",
        '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\n'
        f'{body}\\n-----END PRIVATE KEY-----\\n", '
        '"client_email": "ci@shop.iam.gserviceaccount.com"}',
        *body.split("\\n"),
    )
    value = _password()
    add("toml-password", "toml password", f'[database]\nuser = "shop"\npassword = "{value}"', value)
    value = _draw(ALNUM, 40)
    add("toml-token", "toml token", f'[registry]\ntoken = "{value}"', value)

    # -- Markdown tables and bold labels -------------------------------------------------------
    value = _password()
    add(
        "table-row-label",
        "table password row",
        f"| key | value |\n|---|---|\n| password | {value} |",
        value,
    )
    value = _password()
    add(
        "table-column",
        "table accounts column",
        f"| user | password | note |\n|------|----------|------|\n| admin | {value} | prod |",
        value,
    )
    value = _draw(ALNUM, 32)
    add(
        "table-api-key",
        "table api key",
        f"| Service | API key |\n| --- | --- |\n| Sentry | {value} |",
        value,
    )
    value = _password()
    add("bold-password", "bold password", f"**password**: {value}", value)
    value = _draw(ALNUM, 32)
    add("bold-colon-inside", "bold api key", f"- **API key:** `{value}`", value)
    value = _draw(ALNUM, 28)
    add("bold-token", "bold token", f"* **Token**: {value}", value)

    # -- key blocks -------------------------------------------------------------------------------
    body = _pem_body(6)
    add(
        "pem-rsa",
        "rsa private key",
        f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----",
        *body.splitlines(),
    )
    body = _pem_body(5, 70)
    add(
        "openssh",
        "openssh private key",
        f"```\n-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----\n```",
        *body.splitlines(),
    )
    body = _pem_body(4)
    add(
        "pgp",
        "pgp private key",
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
        f"{body}\n={_draw(B64, 4)}\n-----END PGP PRIVATE KEY BLOCK-----",
        *body.splitlines(),
    )
    body = _pem_body(3)
    add(
        "pem-ec",
        "ec private key",
        f"-----BEGIN EC PRIVATE KEY-----\n{body}\n-----END EC PRIVATE KEY-----",
        *body.splitlines(),
    )
    body = _pem_body(4)
    add(
        "pem-encrypted",
        "encrypted private key",
        f"-----BEGIN ENCRYPTED PRIVATE KEY-----\n{body}\n-----END ENCRYPTED PRIVATE KEY-----",
        *body.splitlines(),
    )
    body = "\n".join(_draw(ALNUM, 64) for _ in range(4))
    add(
        "putty",
        "putty key file",
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy\nPublic-Lines: 2\n"
        f"{body}\nPrivate-MAC: {_draw(HEX, 64)}",
        *body.splitlines(),
    )

    # -- JWT and headers -------------------------------------------------------------------------
    signature = _draw(URLSAFE, 43)
    jwt = (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
        + base64.urlsafe_b64encode(b'{"sub":"' + _draw(ALNUM, 12).encode() + b'","adm":1}')
        .decode()
        .rstrip("=")
        + "."
        + signature
    )
    add(
        "jwt-bare",
        "session jwt",
        f"a session JWT from staging: {jwt}",
        signature,
        jwt.split(".")[1],
    )
    value = _draw(URLSAFE, 40)
    add(
        "bearer-header",
        "bearer curl header",
        f"curl -H 'Authorization: Bearer {value}' https://api.example.com/v2/orders",
        value,
    )
    value = base64.b64encode(f"admin:{_password()}".encode()).decode()
    add("basic-header", "basic auth header", f"Authorization: Basic {value}", value)
    value = _password()
    add(
        "curl-user",
        "curl user password",
        f"curl -u admin:{value} https://ci.example.com/api",
        value,
    )

    # -- Chinese labels -------------------------------------------------------------------------
    value = _draw(ALNUM, 24)
    add("zh-miyao", "密钥 生产", f"生产环境密钥：{value}", value)
    value = _password()
    add("zh-mima", "数据库 密码", f"数据库密码是 {value}，别外传。", value)
    value = _draw(ALNUM, 32)
    add("zh-lingpai", "访问令牌", f"访问令牌: {value}", value)
    value = _draw(ALNUM, 32)
    add("zh-api-miyao", "API密钥", f"第三方 API密钥为 {value}。", value)
    value = _password()
    add("zh-kouling", "口令 跳板机", f"跳板机口令：{value}", value)
    value = _draw(ALNUM, 40)
    add("zh-siyao", "私钥 签名", f"签名私钥= {value}", value)

    # -- in a code fence, wrapped over two lines ------------------------------------------------
    value = "sk_live_51" + _draw(ALNUM, 97)
    add(
        "fence-export",
        "fence stripe export",
        f"```bash\nexport STRIPE_SECRET_KEY={value}\nnpm run payouts\n```",
        value,
    )
    value = "sk-proj-" + _draw(URLSAFE, 156)
    add(
        "fence-python",
        "fence openai client",
        f'```python\nclient = OpenAI(api_key="{value}")\n```',
        value,
    )
    value = "ghp_" + _draw(ALNUM, 36)
    add(
        "wrapped-github",
        "wrapped github token",
        f"The CI token is {value[:22]}\n{value[22:]} until Friday.",
        value[:22],
        value[22:],
    )
    value = "sk_live_51" + _draw(ALNUM, 97)
    add(
        "wrapped-stripe-indented",
        "wrapped stripe key",
        f"- Stripe key (old, revoked?): {value[:60]}\n  {value[60:]}",
        value[:60],
        value[60:],
    )

    # -- by context, shape and key material (issue 22) -----------------------------------------
    value = _password()
    add("mysql-attached", "mysql dump flag", f"mysqldump -u root -p{value} shop > shop.sql", value)
    value = _password()
    add("pgpassword-prefix", "psql env prefix", f"PGPASSWORD={value} psql -h db -U shop", value)
    value = _password()
    add("fr-label", "mot de passe routeur", f"Le mot de passe du routeur : {value}", value)
    value = _password()
    add(
        "yaml-block-scalar",
        "yaml block password",
        f"smtp:\n  password: |\n    {value}\n  host: mail",
        value,
    )
    value = "hvs." + _draw(URLSAFE, 90)
    add("vault-token", "vault token prose", f"Vault gave me {value} for the migration.", value)
    value = "0x" + _draw(HEX, 64)
    add("ethereum-key", "ethereum deployer key", f"deployer private key: {value}", value)
    words = ["ranch", "ozone", "tiger", "vivid", "usual", "siren"]
    phrase = " ".join(_random.choice(words) for _ in range(12))
    add("seed-phrase", "wallet seed phrase", f"Seed phrase of the test wallet:\n{phrase}", phrase)
    return cases


CORPUS: tuple[Case, ...] = tuple(_cases())

# Text that holds nothing secret and must come through redaction unchanged: prose, commit
# hashes, carryd ids, UUIDs, paths, error codes and settings that merely name a secret.
ORDINARY: tuple[str, ...] = (
    "We fixed the flaky deploy; see lib/index.js:42 and v2.2.6.",
    "Reverted 9fceb02d0ae598e95dc970b74767f19372d61af8 after the payout test failed.",
    "Short hashes: 9fceb02, a1b2c3d4e5 and (abc1234) in the changelog.",
    "See <!-- mem_0123456789abcdef0123456789abcdef --> and mem_fedcba9876543210fedcba9876543210.",
    "Order 123e4567-e89b-12d3-a456-426614174000 was refunded twice.",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 matches.",
    "The password: see the vault entry for prod.",
    "Rotate the API key every 90 days; the token expires after an hour.",
    "pwd: /srv/shop/current",
    "Use `pwd` to check the folder, then `cd ..`.",
    "| setting | value |\n|---|---|\n| max_tokens | 4096 |\n| timeout | 30s |",
    "| field | type |\n|---|---|\n| password | string |\n| token | string |",
    "**Password policy**: at least 12 characters.",
    "忘记密码了怎么办？密码：请看保险库",
    "密钥轮换：每季度一次。",
    "postgres://localhost:5432/shop has no credentials in it.",
    "The webhook lives at https://discord.com/developers/docs/resources/webhook.",
    "Bearer tokens expire after an hour; Authorization: Bearer $TOKEN in scripts.",
    "ERR_REFUND_CURRENCY_MISMATCH in services/checkout/errors.ts:118",
    "ASIA trip notes: Tokyo, Osaka.",
    "password = os.environ['DB_PASSWORD']",
    "secret_key_base comes from credentials.yml.enc, not from this file.",
    "bypass=true only in staging; pass=3 of 5 tests.",
    "Build 2026-11-28T14:03:00Z took 4m12s on runner ubuntu-24.04.",
    "docker run -u 1000:1000 shop-api; then git push -u origin main",
    "Domains we own:\nABBOTT\nABBVIE\nACCENTURE\nACCOUNTANTS\nAKIAMEDIA\nASIAPACIFIC\nGITHUB",
    "| Token | Meaning |\n|---|---|\n| token | the JWT from /login |",
)
