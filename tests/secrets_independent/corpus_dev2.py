"""Secrets-redaction evaluation corpus (independent author "author-if").

Stdlib only.  Every secret value below is synthetic: it is produced by
``random.Random`` with a fixed seed in the *shape* a real provider uses, so
none of them is a working credential.

CASES     -- texts that contain secrets, with every secret substring listed.
ORDINARY  -- technical texts with NO secret that must pass through unchanged.
"""
from __future__ import annotations

import base64
import hashlib
import json
import random
import string
from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    id: str
    text: str
    secrets: tuple[str, ...]
    kind: str


# ---------------------------------------------------------------------------
# generators (secrets)
# ---------------------------------------------------------------------------
_R = random.Random(0x1F5EC2E7)

ALNUM = string.ascii_letters + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
URLSAFE = ALNUM + "-_"


def _s(n: int, alpha: str = ALNUM, r: random.Random = _R) -> str:
    return "".join(r.choice(alpha) for _ in range(n))


def _hex(n: int, r: random.Random = _R) -> str:
    return _s(n, HEX, r)


def _bytes(n: int, r: random.Random = _R) -> bytes:
    return bytes(r.getrandbits(8) for _ in range(n))


def _b64(n: int, r: random.Random = _R) -> str:
    return base64.b64encode(_bytes(n, r)).decode()


def _b64u(n: int, r: random.Random = _R) -> str:
    return base64.urlsafe_b64encode(_bytes(n, r)).decode().rstrip("=")


def _b64u_json(obj) -> str:
    raw = json.dumps(obj, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _pw(n: int, punct: str = "-_.!*~") -> str:
    """Machine-generated password with at least one of each class."""
    alpha = ALNUM + punct
    while True:
        p = _s(n, alpha)
        if (any(c.islower() for c in p) and any(c.isupper() for c in p)
                and any(c.isdigit() for c in p) and (not punct or any(c in punct for c in p))):
            return p


_WORDS = ("Sommer Winter Falke Tiger Kaffee Banane Mond Anker Wolke Lampe Fenster "
          "Ninja Rocket Pepper Marble Canyon Harbor Walrus Velvet Cobalt Saffron "
          "Tornado Pixel Orbit Cactus Maple Glacier Bishop Lantern").split()


def _human_pw() -> str:
    """Human-style password: word + digits + symbol + word."""
    return (_R.choice(_WORDS) + str(_R.randint(10, 2099)) + _R.choice("!#$%&?+")
            + _R.choice(_WORDS).lower() + str(_R.randint(0, 99)))


def _wrap(s: str, w: int = 64) -> list[str]:
    return [s[i:i + w] for i in range(0, len(s), w)]


def _pem(label: str, nbytes: int, prefix: bytes = b"", r: random.Random = _R,
         indent: str = "") -> str:
    body = base64.b64encode(prefix + _bytes(nbytes - len(prefix), r)).decode()
    lines = [f"-----BEGIN {label}-----", *_wrap(body), f"-----END {label}-----"]
    return "\n".join(indent + ln if i else ln for i, ln in enumerate(lines))


def _jwt(payload: dict, alg: str = "HS256", sig_bytes: int = 32) -> str:
    return ".".join([_b64u_json({"alg": alg, "typ": "JWT"}), _b64u_json(payload),
                     _b64u(sig_bytes)])


def _uuid(r: random.Random = _R) -> str:
    h = _hex(32, r)
    h = h[:12] + "4" + h[13:16] + r.choice("89ab") + h[17:]
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_BIP = ("abandon ability absorb abstract acid acoustic actress adapt advice aerobic "
        "afford agent album alley amateur anchor angle animal ankle antenna anxiety "
        "apology arena armor arrow artwork aspect assault atom auction audit autumn "
        "avocado awake axis bacon badge balcony bamboo banner barrel basket battle "
        "beach beauty believe bench bicycle biology blanket blossom bonus border "
        "bounce bracket brave breeze brick bridge broccoli bubble budget buffalo "
        "cabbage cactus canal canyon carbon carpet castle catalog cement cereal "
        "chalk charge cherry chimney civil clarify clinic clump coconut comic "
        "coral cousin crater cricket crucial cushion dance dawn decade denial "
        "desert device diesel dinosaur dolphin donkey dragon drift eagle echo "
        "eclipse elbow embark enrich erosion essay evolve exotic fabric falcon "
        "fatigue feather fiction filter flamingo fossil frequent frozen galaxy "
        "garlic gauge genius giraffe glimpse gorilla gravity guitar hamster "
        "harvest hazard hedgehog hobby horizon hover hurdle icon igloo immune "
        "income infant inhale insect island ivory jacket jaguar jungle kangaroo "
        "kidney kitten ladder lava lemon leopard liberty lizard lobster lunar "
        "magnet mammal mango marble meadow melody mercy milk mirror monkey mosquito "
        "muffin mushroom napkin nephew noodle oasis obey ocean olive orbit ostrich "
        "oyster paddle panda parrot peanut pelican pepper piano pigeon planet pluck "
        "pony potato pudding pumpkin puzzle quantum rabbit raccoon radar razor "
        "rhythm ribbon rocket saddle salmon satoshi scorpion shrimp siren skull "
        "slogan snake spider squirrel stadium sunset swamp tattoo tornado toward "
        "trumpet tulip tunnel turtle umbrella unicorn uphold valley velvet violin "
        "volcano walnut wasp whale wisdom wolf yellow zebra zone").split()

CASES: list[Case] = []


def _add(cid: str, kind: str, text: str, *secrets: str) -> None:
    CASES.append(Case(cid, text.strip("\n") + "\n", tuple(secrets), kind))


# ---------------------------------------------------------------------------
# CASES
# ---------------------------------------------------------------------------

# 1 GitLab runner authentication token
_t = "glrt-" + _s(20, URLSAFE)
_add("if-gitlab-runner-register", "ci_token", f"""
## Runner rebuild (hand-off, 2024-03-12)

Old shell runner on `build-07` died with the disk. New one registered like this:

```console
$ sudo gitlab-runner register --non-interactive \\
    --url https://gitlab.corp.example \\
    --token {_t} \\
    --executor docker --docker-image alpine:3.19 \\
    --description "build-07-docker"
Runtime platform  arch=amd64 os=linux pid=41122 revision=782c6ecb version=16.9.1
Verifying runner... is valid                        runner=2hBrxk_Ty
Runner registered successfully.
```

TODO: move the token into the Ansible vault, it is still in shell history.
""", _t)

# 2 GitLab PAT inside a git remote URL
_t = "glpat-" + _s(20, URLSAFE)
_add("if-gitlab-pat-remote-url", "vendor_token", f"""
mirror job keeps failing, remote config on the mirror box:

```
$ git remote -v
origin  https://oauth2:{_t}@gitlab.com/acme-infra/terraform-modules.git (fetch)
origin  https://oauth2:{_t}@gitlab.com/acme-infra/terraform-modules.git (push)
$ git fetch
remote: HTTP Basic: Access denied. The provided password or token is incorrect or it has expired.
```
Token expired 2024-05-01; ask Priya to rotate the project access token.
""", _t)

# 3 GitHub fine-grained PAT
_t = "github_pat_11" + _s(20, UPPER_ALNUM) + "_" + _s(59, ALNUM)
_add("if-github-fine-grained-ledger", "vendor_token", f"""
| date       | who   | what                                                   |
|------------|-------|--------------------------------------------------------|
| 2024-06-03 | kmori | created fine-grained PAT for the release bot           |
| 2024-06-03 | kmori | value: `{_t}` |
| 2024-06-04 | jlee  | scoped to contents:write on acme/release-notes only    |
| 2024-06-10 | jlee  | expiry set to 90 days, calendar reminder added         |
""", _t)

# 4 GitHub classic PAT via here-string
_t = "ghp_" + _s(36)
_add("if-github-classic-gh-cli", "vendor_token", f"""
```bash
# CI image bootstrap, runs as root inside the container
apt-get install -y gh
gh auth login --hostname github.com --with-token <<< "{_t}"
gh auth status
#  ✓ Logged in to github.com account acme-ci (keyring)
#  - Token scopes: 'repo', 'workflow'
```
""", _t)

# 5 AWS credentials file
_ak = "AKIA" + _s(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
_sk = _s(40, ALNUM + "+/")
_add("if-aws-credentials-ini", "cloud_credential", f"""
Contents of `~/.aws/credentials` on the bastion (found during the audit, do not leave like this):

```ini
[default]
region = eu-central-1

[billing-export]
aws_access_key_id = {_ak}
aws_secret_access_key = {_sk}
output = json
```
""", _ak, _sk)

# 6 AWS STS assume-role JSON output
_ak = "ASIA" + _s(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
_sk = _s(40, ALNUM + "+/")
_st = "IQoJb3JpZ2luX2VjE" + _s(340, ALNUM + "+/") + "=="
_add("if-aws-sts-assume-role-json", "cloud_credential", f"""
$ aws sts assume-role --role-arn arn:aws:iam::210987654321:role/incident-readonly --role-session-name tk-ir-42
{{
    "Credentials": {{
        "AccessKeyId": "{_ak}",
        "SecretAccessKey": "{_sk}",
        "SessionToken": "{_st}",
        "Expiration": "2024-07-19T14:02:11+00:00"
    }},
    "AssumedRoleUser": {{
        "AssumedRoleId": "AROATX3PNLQ5EXAMPLE7:tk-ir-42",
        "Arn": "arn:aws:sts::210987654321:assumed-role/incident-readonly/tk-ir-42"
    }}
}}
""", _ak, _sk, _st)

# 7 Stripe live secret key in curl -u
_t = "sk_live_51" + _s(22) + _s(72)
_add("if-stripe-live-curl", "vendor_token", f"""
Refund for ticket #8812 issued manually because the dashboard was down:

    curl https://api.stripe.com/v1/refunds \\
      -u {_t}: \\
      -d charge=ch_3PQx1x2eZvKYlo2C0x8aNq1z \\
      -d amount=4900

Response 200, refund re_3PQx1x2eZvKYlo2C1WkL0mZa.
""", _t)

# 8 Stripe webhook signing secret, German label
_t = "whsec_" + _s(32)
_add("if-stripe-webhook-de", "webhook_secret", f"""
### Übergabe Zahlungsdienst

- Endpunkt: `https://pay.acme.de/hooks/stripe`
- Ereignisse: `checkout.session.completed`, `invoice.paid`
- Webhook-Signaturgeheimnis: {_t}
- Das Geheimnis liegt noch nicht im Vault, bitte nachtragen (Ticket ZAHL-311).
""", _t)

# 9 Slack bot token + signing secret in Helm values
_bt = f"xoxb-{_R.randint(10**10, 10**11 - 1)}-{_R.randint(10**12, 10**13 - 1)}-{_s(24)}"
_ss = _hex(32)
_add("if-slack-bot-helm-values", "chat_token", f"""
```yaml
# values-prod.yaml for the incident-bot chart
replicaCount: 2
image:
  repository: ghcr.io/acme/incident-bot
  tag: "2.14.0"
slack:
  botToken: "{_bt}"
  signingSecret: {_ss}
  defaultChannel: "#inc-bridge"
resources:
  limits:
    memory: 256Mi
```
""", _bt, _ss)

# 10 Slack incoming webhook pasted with no label at all
_t = f"https://hooks.slack.com/services/T{_s(8, UPPER_ALNUM)}/B{_s(10, UPPER_ALNUM)}/{_s(24)}"
_add("if-slack-webhook-unlabeled", "webhook_url", f"""
**[10:42] dana:** can you point the nightly job at the new channel?
**[10:43] omar:** sure, which one
**[10:43] dana:** {_t}
**[10:44] omar:** 👍 done, first message should land tonight at 02:00
""", _t)

# 11 Discord bot token in Python
_uid = str(_R.randint(10**17, 10**18 - 1))
_t = (base64.b64encode(_uid.encode()).decode().rstrip("=") + "." + _s(6, URLSAFE)
      + "." + _s(38, URLSAFE))
_add("if-discord-bot-python", "chat_token", f"""
quick repro for the gateway reconnect bug:

```python
import discord

intents = discord.Intents.default()
client = discord.Client(intents=intents)

@client.event
async def on_ready():
    print("ready as", client.user)

client.run("{_t}")
```
""", _t)

# 12 Telegram bot token, Russian notes
_t = f"{_R.randint(10**9, 7 * 10**9)}:AA{_s(33, URLSAFE)}"
_add("if-telegram-bot-ru", "chat_token", f"""
## Бот оповещений (дежурство)

Токен бота: `{_t}`
Проверка, что бот жив:

```sh
curl -s "https://api.telegram.org/bot{_t}/getMe" | jq .ok
```

Чат дежурных: -1001987654321. Бот должен быть админом чата.
""", _t)

# 13 OpenAI project key among non-secret env
_t = "sk-proj-" + _s(74, URLSAFE) + "T3BlbkFJ" + _s(74, URLSAFE)
_add("if-openai-project-key-env", "ai_api_key", f"""
```dotenv
# .env.local — summariser service
LOG_LEVEL=debug
MODEL_NAME=gpt-4o-mini
MAX_TOKENS=1024
OPENAI_API_KEY={_t}
REQUEST_TIMEOUT_S=30
```
""", _t)

# 14 Anthropic key inside a JSON settings file
_t = "sk-ant-api03-" + _s(93, URLSAFE) + "AA"
_add("if-anthropic-key-json", "ai_api_key", f"""
`~/.config/notes-agent/settings.json` as it was when the laptop was reimaged:

```json
{{
  "provider": "anthropic",
  "apiKey": "{_t}",
  "model": "claude-3-5-sonnet-latest",
  "temperature": 0.2,
  "cacheDir": "/home/rk/.cache/notes-agent"
}}
```
""", _t)

# 15 Postgres URL password inside a Python traceback
_p = _pw(18)
_add("if-postgres-url-traceback", "db_password", f"""
Worker crashed on deploy, log excerpt:

```
Traceback (most recent call last):
  File "/app/worker/main.py", line 41, in <module>
    engine = create_engine(settings.DATABASE_URL, pool_pre_ping=True)
  File "/usr/local/lib/python3.12/site-packages/sqlalchemy/engine/create.py", line 618, in create_engine
    u = _url.make_url(url)
sqlalchemy.exc.ArgumentError: Could not parse SQLAlchemy URL from string 'postgresql+psycopg2://orders_rw:{_p}@pg-orders.internal:5432/orders?sslmode=require '
```

Root cause: trailing space in the Helm value. Fixed in chart 3.2.1.
""", _p)

# 16 PGPASSWORD in shell
_p = _human_pw()
_add("if-pgpassword-shell", "db_password", f"""
Restoring staging from last night's dump:

```bash
export PGHOST=10.20.4.17 PGUSER=restore PGDATABASE=stage_core
PGPASSWORD='{_p}' pg_restore --clean --if-exists -j 4 /backups/core-2024-08-02.dump
PGPASSWORD='{_p}' psql -c 'ANALYZE;'
```
took ~37 min on the m6i.2xlarge.
""", _p)

# 17 mysql -p
_p = _pw(14, "-_.!")
_add("if-mysql-cli-p", "db_password", f"""
    [ops@db-legacy-02 ~]$ mysqldump -uroot -p'{_p}' --single-transaction --routines shop > shop.sql
    mysqldump: [Warning] Using a password on the command line interface can be insecure.
    [ops@db-legacy-02 ~]$ ls -lh shop.sql
    -rw-rw-r--. 1 ops ops 2.3G Aug  9 03:14 shop.sql
""", _p)

# 18 redis.conf requirepass / masterauth
_p1, _p2 = _s(32), _s(24, ALNUM + "-_")
_add("if-redis-conf", "db_password", f"""
Diff applied to `/etc/redis/redis.conf` on cache-1..3:

```diff
 bind 0.0.0.0
 protected-mode yes
-# requirepass foobared
+requirepass {_p1}
+masterauth {_p2}
 maxmemory 6gb
 maxmemory-policy allkeys-lru
```
""", _p1, _p2)

# 19 MongoDB SRV URI
_p = _pw(20, "")
_add("if-mongodb-srv-uri", "db_password", f"""
Atlas cluster for analytics, connection string from the Atlas UI:

`mongodb+srv://analytics_ro:{_p}@cluster0.k7q2m.mongodb.net/events?retryWrites=true&w=majority&appName=reports`

Read-only user; IP allow-list is the office egress (203.0.113.0/28).
""", _p)

# 20 JWT bearer in curl
_t = _jwt({"sub": _uuid(), "iss": "https://auth.acme.io/", "aud": "orders-api",
           "iat": 1717430400, "exp": 1717434000, "scope": "orders:write"}, "RS256", 256)
_add("if-jwt-bearer-curl", "bearer_token", f"""
Reproduced the 409 with a token copied from the browser:

```sh
curl -sS -X POST https://orders.acme.io/v2/orders \\
  -H "Authorization: Bearer {_t}" \\
  -H 'Content-Type: application/json' \\
  -d '{{"sku":"KB-104","qty":1}}'
{{"error":"conflict","detail":"idempotency key reused"}}
```
""", _t)

# 21 Basic auth header in an nginx debug log
_b = base64.b64encode(f"deploy:{_pw(16)}".encode()).decode()
_add("if-basic-auth-nginx-debug", "basic_auth", f"""
2024/05/14 09:12:44 [debug] 1187#1187: *31 http header: "Host: artifacts.acme.internal"
2024/05/14 09:12:44 [debug] 1187#1187: *31 http header: "User-Agent: curl/8.5.0"
2024/05/14 09:12:44 [debug] 1187#1187: *31 http header: "Authorization: Basic {_b}"
2024/05/14 09:12:44 [debug] 1187#1187: *31 http header: "Accept: */*"
2024/05/14 09:12:44 [debug] 1187#1187: *31 http header done
""", _b)

# 22 RSA private key PEM pasted in an incident note
_k = _pem("RSA PRIVATE KEY", 1190, prefix=b"\x30\x82\x04\xa2\x02\x01\x00\x02\x82\x01\x01\x00")
_add("if-rsa-private-key-pem", "private_key", f"""
# INC-2291 TLS outage

The cert was renewed but nginx was still loading the old key. For reference, this is
what was in `/etc/nginx/tls/api.key` on the broken node:

{_k}

It does not match the new cert (modulus differs). Replaced, nginx reloaded 14:05 UTC.
""", _k)

# 23 OpenSSH private key
_k = _pem("OPENSSH PRIVATE KEY", 300, prefix=b"openssh-key-v1\x00\x00\x00\x00\x04none\x00\x00\x00\x04none")
_add("if-openssh-private-key", "private_key", f"""
```
$ cat ~/.ssh/deploy_ed25519
{_k}
$ ssh-keygen -lf ~/.ssh/deploy_ed25519
256 SHA256:Vq3b0yJm0k9pXgK2cT1S2l7a5Hq0JwQy8fD3e1mN4aQ deploy@ci (ED25519)
```
""", _k)

# 24 PGP private key block
_k = ("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
      + "\n".join(_wrap(base64.b64encode(b"\x95\x05\x86\x04" + _bytes(900)).decode()))
      + "\n=" + _s(4, ALNUM + "+/") + "\n-----END PGP PRIVATE KEY BLOCK-----")
_add("if-pgp-private-key-block", "private_key", f"""
Release signing key export (for the offline backup only):

{_k}
""", _k)

# 25 Kubernetes Secret manifest with base64 data values
_v1 = base64.b64encode(_pw(22).encode()).decode()
_v2 = base64.b64encode(("rk_" + _s(40)).encode()).decode()
_add("if-k8s-secret-manifest", "k8s_secret", f"""
```yaml
apiVersion: v1
kind: Secret
metadata:
  name: billing-api
  namespace: billing
  labels:
    app.kubernetes.io/name: billing-api
type: Opaque
data:
  DB_USER: YmlsbGluZw==
  DB_PASSWORD: {_v1}
  PSP_API_KEY: {_v2}
```
""", _v1, _v2)

# 26 kubectl create secret --from-literal
_p, _k2 = _pw(20), _hex(48)
_add("if-kubectl-from-literal", "k8s_secret", f"""
```console
$ kubectl -n search create secret generic opensearch-creds \\
    --from-literal=username=admin \\
    --from-literal=password='{_p}' \\
    --from-literal=snapshot-repo-key={_k2} \\
    --dry-run=client -o yaml | kubectl apply -f -
secret/opensearch-creds created
```
""", _p, _k2)

# 27 docker config.json auth
_b = base64.b64encode(f"ci-bot:{_s(32)}".encode()).decode()
_add("if-docker-config-json", "registry_credential", f"""
The build agent's `~/.docker/config.json` (this is why pushes to harbor worked without login):

```json
{{
  "auths": {{
    "harbor.acme.internal": {{
      "auth": "{_b}"
    }}
  }},
  "credsStore": "",
  "currentContext": "default"
}}
```
""", _b)

# 28 Docker Hub PAT via password-stdin
_t = "dckr_pat_" + _s(27, URLSAFE)
_add("if-dockerhub-pat-stdin", "registry_credential", f"""
    - name: Login to Docker Hub
      run: echo "{_t}" | docker login -u acmebuild --password-stdin
    - name: Push
      run: docker push acmebuild/edge-proxy:${{{{ github.sha }}}}
""", _t)

# 29 .npmrc token
_t = "npm_" + _s(36)
_add("if-npmrc-auth-token", "registry_credential", f"""
`.npmrc` committed by accident in frontend@a91c3e2 (reverted in the next commit):

```
@acme:registry=https://registry.npmjs.org/
//registry.npmjs.org/:_authToken={_t}
save-exact=true
```
""", _t)

# 30 PyPI token in .pypirc
_t = "pypi-AgEIcHlwaS5vcmcCJ" + _s(150, URLSAFE)
_add("if-pypirc-token", "registry_credential", f"""
```ini
[distutils]
index-servers =
    pypi

[pypi]
username = __token__
password = {_t}
```
""", _t)

# 31 Terraform HCL with RDS password and Vault token
_p, _vt = _pw(24, "-_.!"), "hvs." + _s(24)
_add("if-terraform-hcl-inline", "iac_secret", f"""
```hcl
provider "vault" {{
  address = "https://vault.acme.internal:8200"
  token   = "{_vt}"
}}

resource "aws_db_instance" "reports" {{
  identifier        = "reports-prod"
  engine            = "postgres"
  engine_version    = "15.5"
  instance_class    = "db.r6g.large"
  username          = "reports_admin"
  password          = "{_p}"
  allocated_storage = 200
}}
```
""", _vt, _p)

# 32 Vault login with a long service token
_t = "hvs.CAESI" + _s(86, URLSAFE)
_add("if-vault-login-long-token", "iac_secret", f"""
```
$ vault login {_t}
Success! You are now authenticated. The token information displayed below
is already stored in the token helper. You do NOT need to run "vault login"
again. Future Vault requests will automatically use this token.

Key                  Value
---                  -----
token_accessor       9NpQ3cL0rUe2w7mYzKf1xB4a
token_duration       767h59m57s
token_renewable      true
token_policies       ["default" "ops-admin"]
```
""", _t)

# 33 GCP service-account JSON with escaped private key
_body = base64.b64encode(b"\x30\x82\x04\xbd\x02\x01\x00\x30\x0d" + _bytes(1200)).decode()
_pk = "-----BEGIN PRIVATE KEY-----\\n" + "\\n".join(_wrap(_body)) + "\\n-----END PRIVATE KEY-----\\n"
_pkid = _hex(40)
_add("if-gcp-service-account-json", "private_key", f"""
```json
{{
  "type": "service_account",
  "project_id": "acme-data-platform",
  "private_key_id": "{_pkid}",
  "private_key": "{_pk}",
  "client_email": "bq-loader@acme-data-platform.iam.gserviceaccount.com",
  "client_id": "104958213377465920117",
  "auth_uri": "https://accounts.google.com/o/oauth2/auth",
  "token_uri": "https://oauth2.googleapis.com/token"
}}
```
""", _pkid, _pk)

# 34 Azure storage connection string
_k = _b64(64)
_add("if-azure-storage-connstr", "cloud_credential", f"""
appsettings.Production.json had this (moved to Key Vault reference since):

    "Storage": {{
      "ConnectionString": "DefaultEndpointsProtocol=https;AccountName=acmeinvoicesprod;AccountKey={_k};EndpointSuffix=core.windows.net"
    }}
""", _k)

# 35 Azure SAS token in URL
_sig = _b64(32).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
_add("if-azure-sas-url", "signed_url", f"""
Shared the export with the auditors via SAS (expires end of month):

https://acmeexports.blob.core.windows.net/audit/2024-Q2.zip?sv=2022-11-02&ss=b&srt=o&sp=r&se=2024-07-31T23:59:59Z&st=2024-07-01T08:00:00Z&spr=https&sig={_sig}
""", _sig)

# 36 Twilio auth token, Spanish labels
_sid = "AC" + _hex(32)
_tok = _hex(32)
_add("if-twilio-es", "vendor_token", f"""
## Notas de traspaso — SMS de verificación

- SID de la cuenta: `{_sid}` (no es secreto)
- Token de autenticación: `{_tok}`
- Número emisor: +34 600 000 123
- Si falla el envío, revisar la consola de Twilio > Monitor > Logs.
""", _tok)

# 37 SendGrid API key as SMTP password
_t = "SG." + _s(22, URLSAFE) + "." + _s(43, URLSAFE)
_add("if-sendgrid-smtp-ini", "vendor_token", f"""
```ini
[smtp]
enabled = true
host = smtp.sendgrid.net:587
user = apikey
password = {_t}
from_address = grafana@acme.io
from_name = Grafana
```
""", _t)

# 38 Mailgun key in curl
_t = "key-" + _hex(32)
_add("if-mailgun-curl", "vendor_token", f"""
test message to check the new DNS records:

```
curl -s --user 'api:{_t}' \\
  https://api.eu.mailgun.net/v3/mg.acme.eu/messages \\
  -F from='Ops <ops@mg.acme.eu>' -F to=me@acme.eu -F subject='dkim test' -F text='hi'
```
""", _t)

# 39 Datadog keys, German runbook
_api, _app = _hex(32), _hex(40)
_add("if-datadog-de-runbook", "vendor_token", f"""
### Runbook: Datadog-Agent neu installieren

1. Alten Agent entfernen: `sudo apt purge datadog-agent`
2. Neu installieren mit:
   ```
   DD_API_KEY={_api} DD_SITE="datadoghq.eu" bash -c "$(curl -L https://install.datadoghq.com/scripts/install_script_agent7.sh)"
   ```
3. Für das Monitor-Skript wird zusätzlich der Anwendungsschlüssel benötigt:
   Anwendungsschlüssel = `{_app}`
4. Prüfen: `sudo datadog-agent status | head -20`
""", _api, _app)

# 40 Japanese table with DB passwords
_p1, _p2 = _pw(16), _pw(16)
_add("if-ja-db-password-table", "db_password", f"""
## 検証環境 DB 接続情報（引き継ぎ）

| 環境 | ホスト | ユーザー | パスワード |
|------|--------|----------|------------|
| stg  | stg-db.internal:5432 | app_stg | {_p1} |
| qa   | qa-db.internal:5432  | app_qa  | {_p2} |

※ 本番のパスワードは 1Password の「本番DB」項目を参照してください。
""", _p1, _p2)

# 41 Alibaba Cloud AccessKey, Chinese notes
_akid = "LTAI5t" + _s(18)
_aks = _s(30)
_add("if-zh-aliyun-accesskey", "cloud_credential", f"""
## 阿里云 OSS 备份脚本说明

备份脚本使用 RAM 子账号 `oss-backup`，只有 `oss:PutObject` 权限。

- AccessKey ID：{_akid}
- AccessKey Secret：{_aks}
- Bucket：acme-backup-hz（华东1 杭州）

```bash
ossutil64 config -e oss-cn-hangzhou.aliyuncs.com -i {_akid} -k {_aks}
```
""", _akid, _aks)

# 42 Spanish SMTP contraseña
_p = _human_pw()
_add("if-es-smtp-contrasena", "password", f"""
Configuración del correo de la impresora de la oficina de Valencia:

    Servidor SMTP: smtp.office365.com
    Puerto: 587 (STARTTLS)
    Usuario: escaner-valencia@acme.es
    Contraseña: {_p}

La impresora no soporta OAuth, por eso usa contraseña de aplicación.
""", _p)

# 43 BIP39 mnemonic, French label
_m = " ".join(_R.choice(_BIP) for _ in range(24))
_add("if-bip39-mnemonic-fr", "crypto_wallet", f"""
Portefeuille de test pour le faucet (réseau Sepolia uniquement) :

phrase de récupération :
{_m}

chemin de dérivation : m/44'/60'/0'/0/0
""", _m)

# 44 Ethereum private key in .env used by hardhat
_k = "0x" + _hex(64)
_add("if-eth-deployer-key-env", "crypto_wallet", f"""
```dotenv
# contracts/.env
SEPOLIA_RPC_URL=https://sepolia.infura.io/v3/${{INFURA_PROJECT_ID}}
DEPLOYER_PRIVATE_KEY={_k}
ETHERSCAN_VERIFY=true
```
then `npx hardhat run scripts/deploy.ts --network sepolia`
""", _k)

# 45 Bitcoin WIF private key
_k = "5" + _s(50, B58)
_add("if-btc-wif-importprivkey", "crypto_wallet", f"""
```
$ bitcoin-cli -regtest -rpcwallet=legacy importprivkey "{_k}" "cold-1" false
$ bitcoin-cli -regtest -rpcwallet=legacy getbalance
0.50000000
```
""", _k)

# 46 Unlabeled home-grown token in chat
_t = "AZ" + _s(2, UPPER_ALNUM) + "-" + _s(6, UPPER_ALNUM) + "-" + _s(6, UPPER_ALNUM) + "-" + _s(6, UPPER_ALNUM)
_add("if-unlabeled-chat-license", "license_key", f"""
> **mara** 11:02
> the build agent needs the profiler licence again, do you still have it?
>
> **teo** 11:05
> {_t}
>
> **mara** 11:06
> thx, activated
""", _t)

# 47 API key in a query string in an access log
_k = _s(39, URLSAFE)
_add("if-apikey-query-access-log", "api_key", f"""
```
10.4.2.19 - - [21/Jun/2024:07:15:02 +0000] "GET /v1/geocode?q=Hauptstra%C3%9Fe+5%2C+Berlin&api_key={_k}&lang=de HTTP/1.1" 200 812 "-" "python-requests/2.32.3"
10.4.2.19 - - [21/Jun/2024:07:15:03 +0000] "GET /healthz HTTP/1.1" 200 2 "-" "kube-probe/1.29"
```
""", _k)

# 48 Session cookie next to analytics cookies
_sess = _b64u(48) + "." + _b64u(8) + "." + _b64u(20)
_add("if-cookie-session-devtools", "session_cookie", f"""
Copied as cURL from devtools to reproduce the export bug:

```
curl 'https://app.acme.io/api/exports/9921' \\
  -H 'accept: application/json' \\
  -H 'cookie: _ga=GA1.1.1736210934.1718880005; theme=dark; sessionid={_sess}' \\
  -H 'x-requested-with: XMLHttpRequest'
```
""", _sess)

# 49 Google OAuth client secret JSON
_cs = "GOCSPX-" + _s(28, URLSAFE)
_add("if-google-oauth-client-secret", "oauth_secret", f"""
```json
{{"web":{{"client_id":"885421390172-5n0q3ht1k2vb7r9e8m4l6c0a.apps.googleusercontent.com","project_id":"acme-sso","auth_uri":"https://accounts.google.com/o/oauth2/auth","token_uri":"https://oauth2.googleapis.com/token","client_secret":"{_cs}","redirect_uris":["https://sso.acme.io/callback"]}}}}
```
""", _cs)

# 50 Home-grown internal service key in HTTP header
_t = "acme_sk_live_" + _s(8, LOWER_ALNUM) + "_" + _s(40)
_add("if-homegrown-service-header", "api_key", f"""
Ledger entry 2024-04-18 — pricing-svc → inventory-svc call returns 401 since the key rotation.

```http
GET /internal/v3/stock?sku=KB-104 HTTP/1.1
Host: inventory.svc.cluster.local
X-Acme-Service-Key: {_t}
X-Request-Id: 01HVQ3Z6X8Y2K4M5N7P9R0S1T2
```
Inventory only accepts keys issued after 04-15. Need to rotate the pricing secret too.
""", _t)

# 51 .env with several secrets
_dbp, _jwt_s, _skb = _pw(20, ""), _b64(48), _hex(128)
_rp = _s(28)
_add("if-dotenv-rails-many", "env_file", f"""
```dotenv
RAILS_ENV=production
RAILS_LOG_TO_STDOUT=1
DATABASE_URL=postgres://shop:{_dbp}@shop-db.internal:5432/shop_production
REDIS_URL=redis://:{_rp}@redis.internal:6379/0
SECRET_KEY_BASE={_skb}
JWT_SIGNING_SECRET={_jwt_s}
WEB_CONCURRENCY=4
```
""", _dbp, _rp, _skb, _jwt_s)

# 52 Cargo credentials TOML
_t = "cio" + _s(32)
_add("if-cargo-credentials-toml", "registry_credential", f"""
`~/.cargo/credentials.toml`:

```toml
[registry]
token = "{_t}"

[registries.acme]
credential-provider = "cargo:token-from-stdout vault-cargo-token"
```
""", _t)

# 53 Heroku API key shaped like a UUID
_t = _uuid()
_add("if-heroku-uuid-api-key", "api_key", f"""
The review-app pipeline uses this in the CI settings:

    HEROKU_APP_NAME=acme-review
    HEROKU_API_KEY={_t}
    HEROKU_EMAIL=ci@acme.io

Looks like a UUID but it is the account API key — treat it as a secret.
""", _t)

# 54 Sentry legacy DSN with secret part
_pub, _sec = _hex(32), _hex(32)
_add("if-sentry-legacy-dsn", "dsn_secret", f"""
Old (pre-2019) Raven config still in the cron container:

```python
RAVEN_CONFIG = {{
    "dsn": "https://{_pub}:{_sec}@sentry.acme.io/14",
    "release": "cron@4.2.0",
}}
```
""", _sec)

# 55 Spring properties: datasource and LDAP
_p1, _p2 = _pw(18), _human_pw()
_add("if-spring-properties", "password", f"""
```properties
spring.datasource.url=jdbc:postgresql://hr-db.internal:5432/hr
spring.datasource.username=hr_app
spring.datasource.password={_p1}
spring.ldap.urls=ldaps://ad.corp.acme.local:636
spring.ldap.base=DC=corp,DC=acme,DC=local
spring.ldap.username=CN=svc-hr,OU=Service Accounts,DC=corp,DC=acme,DC=local
spring.ldap.password={_p2}
```
""", _p1, _p2)

# 56 Shopify admin token
_t = "shpat_" + _hex(32)
_add("if-shopify-admin-token", "vendor_token", f"""
GraphQL admin call used to bulk-fix product tags:

```bash
curl -X POST https://acme-store.myshopify.com/admin/api/2024-04/graphql.json \\
  -H 'Content-Type: application/json' \\
  -H 'X-Shopify-Access-Token: {_t}' \\
  -d @fix-tags.json
```
""", _t)

# 57 DigitalOcean doctl token
_t = "dop_v1_" + _hex(64)
_add("if-digitalocean-doctl", "cloud_credential", f"""
```
$ doctl auth init --context acme-staging -t {_t}
Validating token... OK
$ doctl kubernetes cluster kubeconfig save stg-fra1
Notice: Adding cluster credentials to kubeconfig file found in "/home/ops/.kube/config"
```
""", _t)

# 58 Cloudflare API token (no prefix), in Authorization header
_t = _s(40, URLSAFE)
_add("if-cloudflare-bearer", "api_key", f"""
Purge after the CSS fix:

    curl -X POST "https://api.cloudflare.com/client/v4/zones/3f0c9e1b7a2d4c58b6e9f01a2b3c4d5e/purge_cache" \\
         -H "Authorization: Bearer {_t}" \\
         -H "Content-Type: application/json" \\
         --data '{{"files":["https://www.acme.io/static/css/main.css"]}}'
""", _t)

# 59 Hugging Face token
_t = "hf_" + _s(34, string.ascii_letters)
_add("if-huggingface-cli-login", "ai_api_key", f"""
```
$ huggingface-cli login --token {_t} --add-to-git-credential
Token is valid (permission: read).
Your token has been saved to /root/.cache/huggingface/token
Login successful
```
""", _t)

# 60 Atlassian API token
_t = "ATATT3xFfGF0" + _s(170, URLSAFE) + "=" + _hex(8).upper()
_add("if-atlassian-api-token", "vendor_token", f"""
jira-cli config for the triage script (`~/.config/.jira/.config.yml`):

```yaml
installation: cloud
server: https://acme.atlassian.net
login: triage-bot@acme.io
project:
  key: OPS
auth_type: basic
api_token: {_t}
```
""", _t)

# 61 Okta SSWS token
_t = "00" + _s(40, URLSAFE)
_add("if-okta-ssws", "api_key", f"""
List deactivated users before the cleanup:

```
curl -s -H "Accept: application/json" \\
     -H "Authorization: SSWS {_t}" \\
     "https://acme.okta.com/api/v1/users?filter=status+eq+%22DEPROVISIONED%22" | jq length
```
""", _t)

# 62 Wi-Fi PSKs in a table
_w1, _w2 = _human_pw(), _s(16, UPPER_ALNUM)
_add("if-wifi-psk-table", "password", f"""
## Office networks

| SSID           | Security  | Key                | VLAN |
|----------------|-----------|--------------------|------|
| ACME-Staff     | WPA2-Ent  | (RADIUS, AD login) | 20   |
| ACME-Guest     | WPA2-PSK  | {_w1} | 90   |
| ACME-IoT       | WPA2-PSK  | {_w2}   | 95   |
""", _w1, _w2)

# 63 Django SECRET_KEY
_t = _s(50, string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)")
_add("if-django-secret-key", "app_secret", f"""
```python
# settings/production.py
DEBUG = False
ALLOWED_HOSTS = ["admin.acme.io"]
SECRET_KEY = "{_t}"
CSRF_TRUSTED_ORIGINS = ["https://admin.acme.io"]
```
""", _t)

# 64 Android keystore passwords in gradle.properties
_p1, _p2 = _pw(16), _pw(16)
_add("if-gradle-keystore-passwords", "password", f"""
```properties
org.gradle.jvmargs=-Xmx4g
android.useAndroidX=true
RELEASE_STORE_FILE=../keystore/acme-release.jks
RELEASE_STORE_PASSWORD={_p1}
RELEASE_KEY_ALIAS=acme
RELEASE_KEY_PASSWORD={_p2}
```
""", _p1, _p2)

# 65 TOTP seed and backup codes
_seed = _s(32, B32)
_codes = [f"{_R.randint(0, 9999):04d}-{_R.randint(0, 9999):04d}" for _ in range(4)]
_add("if-totp-seed-backup-codes", "mfa_secret", f"""
Shared break-glass account `root@acme-aws-prod` MFA (store in the safe, then delete this note):

otpauth://totp/AWS:root@acme-aws-prod?secret={_seed}&issuer=AWS&algorithm=SHA1&digits=6&period=30

Backup codes:
- {_codes[0]}
- {_codes[1]}
- {_codes[2]}
- {_codes[3]}
""", _seed, *_codes)

# 66 WireGuard private key and preshared key (public key is not secret)
_priv, _pub, _psk = _b64(32), _b64(32), _b64(32)
_add("if-wireguard-conf", "private_key", f"""
```ini
# /etc/wireguard/wg0.conf on edge-fra
[Interface]
Address = 10.99.0.1/24
ListenPort = 51820
PrivateKey = {_priv}

[Peer]
# laptop-anna
PublicKey = {_pub}
PresharedKey = {_psk}
AllowedIPs = 10.99.0.12/32
```
""", _priv, _psk)

# 67 age secret key
_k = "AGE-SECRET-KEY-1" + _s(58, BECH32).upper()
_pubage = "age1" + _s(58, BECH32)
_add("if-age-secret-key", "private_key", f"""
```
$ age-keygen -o key.txt
Public key: {_pubage}
$ cat key.txt
# created: 2024-02-11T10:31:07+01:00
# public key: {_pubage}
{_k}
```
The public key goes into `.sops.yaml`; key.txt must go to the team vault.
""", _k)

# 68 Kafka JAAS config and Confluent API secret
_p = _pw(22)
_ck, _cs = _s(16, UPPER_ALNUM), _s(64, ALNUM + "+/")
_add("if-kafka-jaas-confluent", "password", f"""
```properties
bootstrap.servers=pkc-4r297.europe-west1.gcp.confluent.cloud:9092
security.protocol=SASL_SSL
sasl.mechanism=PLAIN
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="{_ck}" password="{_cs}";
# on-prem cluster (legacy)
legacy.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="orders" password="{_p}";
```
""", _cs, _p)

# 69 JDBC SQL Server password in a Java stack trace
_p = _pw(15, "-_.!")
_add("if-jdbc-sqlserver-java-trace", "db_password", f"""
```
2024-06-02 03:00:14.221 ERROR 1 --- [main] o.s.boot.SpringApplication : Application run failed
com.microsoft.sqlserver.jdbc.SQLServerException: Login failed for user 'etl_loader'. ClientConnectionId:6b1f0a44-8d2e-4f6e-9a51-1c7e3b2d9f10
	at com.microsoft.sqlserver.jdbc.SQLServerException.makeFromDatabaseError(SQLServerException.java:265)
	at com.microsoft.sqlserver.jdbc.SQLServerConnection.connect(SQLServerConnection.java:3725)
	at com.acme.etl.DataSourceFactory.open(DataSourceFactory.java:58)
Caused by: connection url = jdbc:sqlserver://mssql-dwh.corp:1433;databaseName=DWH;user=etl_loader;password={_p};encrypt=true;trustServerCertificate=true
```
""", _p)

# 70 MQTT password in docker-compose
_p = _s(20)
_add("if-mqtt-compose-env", "password", f"""
```yaml
services:
  zigbee2mqtt:
    image: koenkk/zigbee2mqtt:1.38.0
    environment:
      TZ: Europe/Vienna
      ZIGBEE2MQTT_CONFIG_MQTT_SERVER: mqtt://mosquitto:1883
      ZIGBEE2MQTT_CONFIG_MQTT_USER: z2m
      ZIGBEE2MQTT_CONFIG_MQTT_PASSWORD: {_p}
    volumes:
      - ./z2m-data:/app/data
```
""", _p)

# 71 Google server-side API key
_t = "AIza" + _s(35, URLSAFE)
_add("if-google-maps-server-key", "api_key", f"""
Geocoding backfill script (server-side key, IP-restricted to the batch host):

```python
GMAPS_KEY = "{_t}"
resp = requests.get("https://maps.googleapis.com/maps/api/geocode/json",
                    params={{"address": addr, "key": GMAPS_KEY}}, timeout=10)
```
""", _t)

# 72 Mapbox secret token
_t = "sk." + _b64u_json({"u": "acme-maps", "a": _s(25, LOWER_ALNUM)}) + "." + _s(22, URLSAFE)
_add("if-mapbox-secret-token", "api_key", f"""
Tileset upload uses the *secret* token (scope `uploads:write`), not the public one:

    MAPBOX_ACCESS_TOKEN={_t} tilesets upload-source acme-maps parcels parcels.geojsonl
""", _t)

# 73 TLS key in a YAML block scalar (indented multi-line)
_k = _pem("EC PRIVATE KEY", 121, prefix=b"\x30\x77\x02\x01\x01\x04\x20", indent="    ")
_add("if-tls-key-yaml-block", "private_key", f"""
```yaml
apiVersion: v1
kind: Secret
metadata:
  name: mqtt-broker-tls
type: kubernetes.io/tls
stringData:
  tls.key: |
    {_k}
```
""", _k)

# 74 Ansible become password on the command line
_p = _human_pw()
_add("if-ansible-become-cli", "password", f"""
Emergency patch run (Ansible vault was unreachable):

    ansible-playbook -i inventories/prod site.yml --limit web \\
      -e "ansible_become_password={_p}" --tags openssl

Remove from shell history afterwards: `history -d $(history 1 | awk '{{print $1}}')`.
""", _p)

# 75 SNMP community string
_c = _s(14, ALNUM)
_add("if-snmp-community", "password", f"""
Switch ports flapping; pulled interface counters:

```
$ snmpwalk -v2c -c {_c} 10.1.0.2 IF-MIB::ifOperStatus
IF-MIB::ifOperStatus.1 = INTEGER: up(1)
IF-MIB::ifOperStatus.2 = INTEGER: down(2)
IF-MIB::ifOperStatus.3 = INTEGER: up(1)
```
""", _c)

# 76 psql conninfo, Russian hand-off
_p = _pw(16, "-_.")
_add("if-ru-psql-conninfo", "db_password", f"""
Передаю смену. Реплика отстаёт примерно на 40 минут, подключался так:

```
psql "host=pg-replica-2.dc1 port=5432 dbname=billing user=dba_ro password={_p} sslmode=verify-full"
billing=> SELECT now() - pg_last_xact_replay_timestamp();
```

Пароль временный, завтра его сменят.
""", _p)

# 77 LDAP bind password, Korean notes
_p = _pw(17)
_add("if-ko-ldapsearch-bind", "password", f"""
## LDAP 조회 (인수인계)

서비스 계정 비밀번호: {_p}

```
ldapsearch -H ldaps://ldap.acme.kr -D "uid=svc-wiki,ou=svc,dc=acme,dc=kr" -w '{_p}' -b "ou=people,dc=acme,dc=kr" "(mail=*@acme.kr)" cn mail
```
""", _p)

# 78 Credentials embedded in a wget URL
_p = _pw(14, "")
_add("if-wget-userinfo-url", "password", f"""
Dockerfile of the legacy image (line 12):

    RUN wget -q https://deploy:{_p}@artifacts.acme.internal/repo/tools/lic-agent-3.4.tar.gz \\
     && tar xzf lic-agent-3.4.tar.gz -C /opt
""", _p)

# 79 GitHub webhook shared secret, French notes
_t = _hex(40)
_add("if-fr-webhook-shared-secret", "webhook_secret", f"""
## Webhook GitHub → Jenkins

- URL : `https://jenkins.acme.fr/github-webhook/`
- Type de contenu : `application/json`
- secret partagé (HMAC SHA-256) : {_t}
- Événements : push, pull_request
""", _t)

# 80 PagerDuty REST API token and integration key
_u = "u+" + _s(18, ALNUM + "-_")
_ik = _hex(32)
_add("if-pagerduty-tokens", "vendor_token", f"""
```bash
# trigger a test incident on the "Payments" service
curl -s https://events.pagerduty.com/v2/enqueue -H 'Content-Type: application/json' \\
  -d '{{"routing_key":"{_ik}","event_action":"trigger","payload":{{"summary":"test","source":"ops-laptop","severity":"info"}}}}'

# list on-calls (user REST token)
curl -s -H "Authorization: Token token={_u}" -H "Accept: application/vnd.pagerduty+json;version=2" \\
  https://api.pagerduty.com/oncalls
```
""", _ik, _u)

# 81 NuGet API key
_t = "oy2" + _s(43, LOWER_ALNUM)
_add("if-nuget-push-key", "registry_credential", f"""
    PS C:\\src\\Acme.Logging> dotnet nuget push .\\bin\\Release\\Acme.Logging.3.1.0.nupkg --api-key {_t} --source https://api.nuget.org/v3/index.json
    Pushing Acme.Logging.3.1.0.nupkg to 'https://www.nuget.org/api/v2/package'...
      PUT https://www.nuget.org/api/v2/package/
      Created https://www.nuget.org/api/v2/package/ 1834ms
    Your package was pushed.
""", _t)

# 82 RubyGems credentials
_t = "rubygems_" + _hex(48)
_add("if-rubygems-credentials", "registry_credential", f"""
```yaml
# ~/.gem/credentials  (chmod 0600)
---
:rubygems_api_key: {_t}
```
""", _t)

# 83 Grafana service account token
_t = "glsa_" + _s(32) + "_" + _hex(8)
_add("if-grafana-sa-token", "vendor_token", f"""
Dashboards are synced by grizzly; env for the sync job:

```sh
export GRAFANA_URL=https://grafana.acme.io
export GRAFANA_TOKEN={_t}
grr apply dashboards/
```
""", _t)

# 84 New Relic user key
_t = "NRAK-" + _s(27, UPPER_ALNUM)
_add("if-newrelic-user-key", "vendor_token", f"""
NerdGraph query for the alert audit:

```
curl https://api.eu.newrelic.com/graphql -H 'Content-Type: application/json' \\
  -H 'API-Key: {_t}' \\
  --data-binary '{{"query":"{{ actor {{ user {{ name }} }} }}"}}'
```
""", _t)

# 85 Supabase service-role JWT + DB password
_srk = _jwt({"iss": "supabase", "ref": _s(20, string.ascii_lowercase), "role": "service_role",
             "iat": 1709251200, "exp": 2024827200})
_dbp = _pw(20, "")
_add("if-supabase-service-role", "bearer_token", f"""
```dotenv
NEXT_PUBLIC_SUPABASE_URL=https://qzkxwvbnyutrplmsoaei.supabase.co
SUPABASE_SERVICE_ROLE_KEY={_srk}
SUPABASE_DB_PASSWORD={_dbp}
```
the anon key lives in the Vercel project settings, not here.
""", _srk, _dbp)

# 86 Tailscale auth key
_t = "tskey-auth-k" + _s(10, ALNUM) + "CNTRL-" + _s(32, ALNUM)
_add("if-tailscale-authkey", "vendor_token", f"""
cloud-init snippet for the new exit nodes:

```yaml
runcmd:
  - curl -fsSL https://tailscale.com/install.sh | sh
  - tailscale up --authkey={_t} --advertise-exit-node --hostname=exit-{{{{ ds.meta_data.region }}}}
```
""", _t)

# 87 Jenkins API token in curl -u
_t = "11" + _hex(32)
_add("if-jenkins-api-token", "ci_token", f"""
Trigger parameterised build from the release script:

```bash
curl -X POST -u "release-bot:{_t}" \\
  "https://jenkins.acme.internal/job/mobile/job/ios-release/buildWithParameters?VERSION=5.8.0&TRACK=beta"
```
""", _t)

# 88 CircleCI personal token
_t = "CCIPAT_" + _s(22) + "_" + _hex(40)
_add("if-circleci-pat", "ci_token", f"""
```
$ circleci setup --no-prompt --host https://circleci.com --token {_t}
Token has been set.
CircleCI configuration has been saved to /home/ci/.circleci/cli.yml.
```
""", _t)

# 89 Unlabeled password in an incident timeline (chat paste)
_p = _human_pw()
_add("if-unlabeled-password-timeline", "password", f"""
### Timeline (UTC)

- 13:02 alert: `NAS-01 RAID degraded`
- 13:09 Jonas logged into the NAS web UI as admin, "{_p}" (from the sticker on the box!)
- 13:15 disk 3 replaced, rebuild started
- 14:40 rebuild 61%
""", _p)

# 90 Snowflake: private key passphrase in TOML connections
_p = _pw(24)
_add("if-snowflake-connections-toml", "password", f"""
```toml
# ~/.snowflake/connections.toml
[dwh_prod]
account = "acme-eu12345"
user = "DBT_RUNNER"
authenticator = "SNOWFLAKE_JWT"
private_key_file = "/secrets/dbt_rsa_key.p8"
private_key_file_pwd = "{_p}"
warehouse = "TRANSFORM_WH"
role = "TRANSFORMER"
```
""", _p)

# 91 Chinese WeChat Work webhook key + app secret
_wk = _uuid()
_cs = _s(43, URLSAFE)
_add("if-zh-wecom-webhook", "webhook_secret", f"""
### 企业微信告警机器人

告警 webhook（不要外传）：
https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key={_wk}

自建应用 corpid=ww7a1b2c3d4e5f6a7b，agentid=1000007，应用 Secret：{_cs}
""", _wk, _cs)

# 92 Japanese Backlog / chat: API キー without Latin label
_t = _s(64, ALNUM)
_add("if-ja-apikey-inline", "api_key", f"""
- 監視スクリプトの API キーは {_t} です（発行者：佐藤、期限なし）。
- ローテーションは四半期ごとに行う予定。
- 参考：https://acme.backlog.jp/view/OPS-482
""", _t)

# 93 HTTP log with X-Api-Key header in a Go panic dump
_t = "live_" + _s(32, LOWER_ALNUM)
_add("if-go-panic-request-dump", "api_key", f"""
```
2024/07/03 22:17:09 http: panic serving 10.8.1.23:52144: runtime error: invalid memory address or nil pointer dereference
request dump:
POST /v1/charges HTTP/1.1
Host: gateway.acme.internal
Content-Type: application/json
X-Api-Key: {_t}
Idempotency-Key: 7c3e1d2a-90b4-4e8f-a1c2-3b4d5e6f7a8b

goroutine 1844 [running]:
net/http.(*conn).serve.func1()
	/usr/local/go/src/net/http/server.go:1903 +0xbe
```
""", _t)

# 94 Terraform Cloud token in .terraformrc (HCL)
_t = _s(14, LOWER_ALNUM) + ".atlasv1." + _s(67, ALNUM)
_add("if-terraformrc-tfc-token", "iac_secret", f"""
```hcl
# ~/.terraformrc
credentials "app.terraform.io" {{
  token = "{_t}"
}}
plugin_cache_dir = "$HOME/.terraform.d/plugin-cache"
```
""", _t)

# 95 Basic-auth userinfo inside pip index URL (pip.conf)
_t = _s(24, ALNUM)
_add("if-pip-conf-index-url", "registry_credential", f"""
```ini
# /etc/pip.conf on the build image
[global]
index-url = https://__token__:{_t}@pypi.acme.internal/simple
trusted-host = pypi.acme.internal
timeout = 60
```
""", _t)

# 96 Keycloak client secret in kubectl output (decoded)
_t = _s(32, ALNUM)
_add("if-keycloak-client-secret-decoded", "oauth_secret", f"""
```
$ kubectl -n sso get secret grafana-oidc -o jsonpath='{{.data.client-secret}}' | base64 -d
{_t}
$ kubectl -n sso get secret grafana-oidc -o jsonpath='{{.data.client-id}}' | base64 -d
grafana
```
""", _t)


# ---------------------------------------------------------------------------
# ORDINARY texts (no secrets).  Lookalikes come from their own RNG.
# ---------------------------------------------------------------------------
_O = random.Random(0x0D1A7E57)


def _oh(n: int) -> str:
    return _hex(n, _O)


def _ob64(n: int) -> str:
    return _b64(n, _O)


def _sha256_of(s: str) -> str:
    return hashlib.sha256(s.encode()).hexdigest()


ORDINARY: list[tuple[str, str]] = []


def _ord(oid: str, text: str) -> None:
    ORDINARY.append((oid, text.strip("\n") + "\n"))


_commits = [_oh(40) for _ in range(6)]
_ord("if-ord-git-log", f"""
## What changed since 3.4.0

```
$ git log --oneline v3.4.0..HEAD
{_commits[0][:9]} (HEAD -> main, origin/main) fix(api): handle empty cursor in /v2/orders
{_commits[1][:9]} chore(deps): bump golang.org/x/net from 0.23.0 to 0.25.0
{_commits[2][:9]} feat(billing): add proration preview endpoint
{_commits[3][:9]} Merge pull request #1841 from acme/kmori/refund-idempotency
{_commits[4][:9]} test: cover refund retries with fake clock
$ git show --stat {_commits[2]}
commit {_commits[2]}
Author: Kenji Mori <kmori@acme.io>
Date:   Tue Jun 4 11:20:41 2024 +0900

    feat(billing): add proration preview endpoint

 internal/billing/proration.go      | 112 ++++++++++++++++++++++
 internal/billing/proration_test.go |  87 +++++++++++++++++
 2 files changed, 199 insertions(+)
```
Revert target if needed: `{_commits[5]}`.
""")

_arts = ["acme-cli_3.4.1_linux_amd64.tar.gz", "acme-cli_3.4.1_linux_arm64.tar.gz",
         "acme-cli_3.4.1_darwin_arm64.tar.gz", "acme-cli_3.4.1_windows_amd64.zip"]
_ord("if-ord-sha256sums", "Release checksums, verified on the download mirror:\n\n```\n$ cat SHA256SUMS\n"
     + "\n".join(f"{_sha256_of(a)}  {a}" for a in _arts)
     + "\n$ sha256sum -c SHA256SUMS\n" + "\n".join(f"{a}: OK" for a in _arts) + "\n```\n")

_ord("if-ord-package-lock-integrity", f"""
Lockfile diff from the dependabot PR (only integrity changed, upstream republished):

```diff
     "node_modules/semver": {{
       "version": "7.6.2",
       "resolved": "https://registry.npmjs.org/semver/-/semver-7.6.2.tgz",
-      "integrity": "sha512-{_ob64(64)}",
+      "integrity": "sha512-{_ob64(64)}",
       "bin": {{
         "semver": "bin/semver.js"
       }},
     }},
     "node_modules/ms": {{
       "version": "2.1.3",
       "resolved": "https://registry.npmjs.org/ms/-/ms-2.1.3.tgz",
       "integrity": "sha512-{_ob64(64)}"
     }}
```
""")

_ord("if-ord-docker-digests", f"""
```
$ docker images --digests | head -4
REPOSITORY                  TAG       DIGEST                                                                    IMAGE ID       CREATED        SIZE
ghcr.io/acme/edge-proxy     2.14.0    sha256:{_oh(64)}   {_oh(12)}   3 days ago     48.2MB
ghcr.io/acme/edge-proxy     2.13.2    sha256:{_oh(64)}   {_oh(12)}   2 weeks ago    47.9MB
postgres                    16.3      sha256:{_oh(64)}   {_oh(12)}   5 weeks ago    432MB
```
Pin by digest in the Helm chart: `image: ghcr.io/acme/edge-proxy@sha256:{_oh(64)}`
""")

_pods = "\n".join(
    f"checkout-api-{_s(10, 'bcdfghjklmnpqrstvwxz2456789', _O)}-{_s(5, 'bcdfghjklmnpqrstvwxz2456789', _O)}   1/1     Running   {_O.randint(0, 3)}          {_O.randint(1, 9)}d"
    for _ in range(5))
_ord("if-ord-kubectl-pods-uids", f"""
```
$ kubectl -n checkout get pods
NAME                                  READY   STATUS    RESTARTS   AGE
{_pods}
$ kubectl -n checkout get deploy checkout-api -o jsonpath='{{.metadata.uid}}'
{_uuid(_O)}
$ kubectl -n checkout get rs -o custom-columns=NAME:.metadata.name,HASH:.metadata.labels.pod-template-hash
NAME                        HASH
checkout-api-6d9f7c8b5d     6d9f7c8b5d
checkout-api-58c4f9b7d6     58c4f9b7d6
```
""")

_ord("if-ord-aws-arns-resource-ids", f"""
## Network inventory (eu-central-1)

| resource | id |
|---|---|
| VPC | vpc-{_oh(17)} |
| private subnet a | subnet-{_oh(17)} |
| private subnet b | subnet-{_oh(17)} |
| NAT gateway | nat-{_oh(17)} |
| bastion | i-{_oh(17)} |
| AMI (AL2023) | ami-{_oh(17)} |
| SG web | sg-{_oh(17)} |

Roles:
- `arn:aws:iam::210987654321:role/eks-node-group-prod`
- `arn:aws:iam::210987654321:role/github-actions-deploy`
- KMS key: `arn:aws:kms:eu-central-1:210987654321:key/{_uuid(_O)}`
- Bucket: `arn:aws:s3:::acme-prod-artifacts-{_oh(8)}`
- Access key ids look like `AKIA…` — we have none for humans any more; SSO only.
""")

_ED = b"\x00\x00\x00\x0bssh-ed25519\x00\x00\x00 "
_RSA = b"\x00\x00\x00\x07ssh-rsa\x00\x00\x00\x03\x01\x00\x01\x00\x00\x01\x01\x00"
_ssh1 = base64.b64encode(_ED + _bytes(32, _O)).decode()
_ssh2 = base64.b64encode(_ED + _bytes(32, _O)).decode()
_ssh3 = base64.b64encode(_RSA + _bytes(256, _O)).decode()
_ord("if-ord-ssh-authorized-keys", f"""
Current `authorized_keys` for the deploy user (public keys only):

```
ssh-ed25519 {_ssh1} anna@laptop
ssh-ed25519 {_ssh2} ci@buildkite
ssh-rsa {_ssh3} legacy-backup
```

Host key fingerprints (compare before accepting):

```
256 SHA256:{_ob64(32).rstrip("=")} root@bastion (ED25519)
3072 SHA256:{_ob64(32).rstrip("=")} root@bastion (RSA)
```
""")

_cert = _pem("CERTIFICATE", 900, prefix=b"\x30\x82\x03\x80\x30\x82\x02\x68\xa0\x03\x02\x01\x02", r=_O)
_ord("if-ord-x509-certificate", f"""
Public certificate of the internal CA (safe to distribute, pin it in the mobile app):

{_cert}

```
$ openssl x509 -in acme-root-ca.pem -noout -subject -fingerprint -sha256
subject=C = DE, O = ACME GmbH, CN = ACME Internal Root CA G2
sha256 Fingerprint={":".join(_oh(64).upper()[i:i+2] for i in range(0, 64, 2))}
```
""")

_ord("if-ord-css-hex-colours", f"""
Design tokens after the rebrand:

```css
:root {{
  --brand-primary: #1f6feb;
  --brand-secondary: #8250df;
  --surface: #0d1117;
  --surface-raised: #161b22;
  --text: #e6edf3;
  --text-muted: #7d8590;
  --danger: #f85149;
  --success: #3fb950;
  --focus-ring: 0 0 0 3px #1f6feb66;
}}
.btn-primary {{ background: var(--brand-primary); border-color: #1a5fd0; }}
.btn-primary:hover {{ background: #388bfd; }}
```
Built bundle: `dist/assets/index-{_oh(8)}.css`, `dist/assets/index-{_oh(8)}.js`.
""")

_ord("if-ord-webpack-build-output", f"""
```
$ npm run build
> web@5.8.0 build
> vite build

vite v5.2.11 building for production...
✓ 1432 modules transformed.
dist/index.html                         0.61 kB │ gzip:   0.37 kB
dist/assets/logo-{_s(8, URLSAFE, _O)}.svg               4.12 kB │ gzip:   1.90 kB
dist/assets/index-{_s(8, URLSAFE, _O)}.css             38.40 kB │ gzip:   7.02 kB
dist/assets/vendor-{_s(8, URLSAFE, _O)}.js            512.77 kB │ gzip: 164.31 kB
dist/assets/index-{_s(8, URLSAFE, _O)}.js             201.03 kB │ gzip:  61.88 kB
✓ built in 9.84s
```
Source map upload id: {_oh(32)}
""")

_ord("if-ord-env-example-placeholders", """
Copy `.env.example` to `.env` and fill in your own values:

```dotenv
# never commit real values
DATABASE_URL=postgres://app:<password>@localhost:5432/app_dev
REDIS_URL=redis://localhost:6379/0
STRIPE_SECRET_KEY=<your-stripe-secret-key>
OPENAI_API_KEY=${OPENAI_API_KEY}
SLACK_BOT_TOKEN=xoxb-your-token-here
ADMIN_PASSWORD=changeme
JWT_SECRET=CHANGE_ME
SMTP_PASSWORD=
GITHUB_TOKEN=ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX
AWS_SECRET_ACCESS_KEY=******
```
`make dev` refuses to start while `ADMIN_PASSWORD` is still `changeme`.
""")

_ord("if-ord-password-policy-prose", """
## Password and token hygiene (team agreement, 2024)

- Passwords for service accounts are generated by Vault (length 32, all classes) and
  are never typed by humans. If you can read a password in a note, it is a bug.
- API tokens expire after 90 days. The rotation job posts in #sec-rotation one week
  before expiry with the path of the token, never the token itself.
- When pasting terminal output into a ticket, check for `Authorization:` headers,
  `-p` flags on `mysql`, and `PGPASSWORD=` prefixes first.
- Personal access tokens must use the fine-grained kind with the narrowest scope.
- The word "secret" in a Kubernetes manifest does not make it secret: base64 is
  encoding, not encryption. Use sealed-secrets or the external-secrets operator.
- Lost your hardware key? Follow the break-glass runbook; do not ask for backup codes in chat.
""")

_ord("if-ord-terraform-plan-ids", f"""
```
Terraform will perform the following actions:

  # aws_security_group_rule.ingress_https will be created
  + resource "aws_security_group_rule" "ingress_https" {{
      + cidr_blocks              = ["10.0.0.0/8"]
      + from_port                = 443
      + id                       = (known after apply)
      + protocol                 = "tcp"
      + security_group_id        = "sg-{_oh(17)}"
      + security_group_rule_id   = (known after apply)
      + to_port                  = 443
      + type                     = "ingress"
    }}

  # aws_db_instance.reports will be updated in-place
  ~ resource "aws_db_instance" "reports" {{
        id                       = "db-{_s(26, UPPER_ALNUM, _O)}"
      ~ instance_class           = "db.r6g.large" -> "db.r6g.xlarge"
      ~ password                 = (sensitive value)
        # (42 unchanged attributes hidden)
    }}

Plan: 1 to add, 1 to change, 0 to destroy.
```
""")

_ulid = lambda: _s(26, "0123456789ABCDEFGHJKMNPQRSTVWXYZ", _O)  # noqa: E731
_ord("if-ord-incident-ids", f"""
# INC-2304 — duplicate webhooks

- trace id `{_oh(32)}` (W3C `traceparent: 00-{_oh(32)}-{_oh(16)}-01`)
- affected event ids: `evt_{_ulid()}`, `evt_{_ulid()}`, `evt_{_ulid()}`
- job run: `{_uuid(_O)}`
- outbox row ids: {_ulid()}, {_ulid()}
- Sentry issue: ACME-API-4KZ (first seen 02:14 UTC)
- Buildkite build #18823, job `{_uuid(_O)}`

Root cause: the consumer committed offsets after the HTTP call instead of before the retry
decision. Fix merged in `{_oh(12)}`.
""")

_payload = json.dumps({"feature_flags": {"new_checkout": True, "dark_mode": False},
                       "rollout": 25, "regions": ["eu", "us"]}, separators=(",", ":"))
_png = base64.b64encode(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x06\x00\x00\x00" + _bytes(60, _O)).decode()
_ord("if-ord-base64-public-data", f"""
The flag service stores config as base64 JSON; decoded it is harmless:

```
$ kubectl -n flags get cm flagd -o jsonpath='{{.data.config}}'
{base64.b64encode(_payload.encode()).decode()}
$ kubectl -n flags get cm flagd -o jsonpath='{{.data.config}}' | base64 -d
{_payload}
```

Favicon is inlined as a data URI:

```html
<link rel="icon" href="data:image/png;base64,{_png}">
```
""")

_ord("if-ord-go-sum", "```\n" + "\n".join(
    f"{m} {v} h1:{_ob64(32)}\n{m} {v}/go.mod h1:{_ob64(32)}"
    for m, v in [("github.com/google/uuid", "v1.6.0"), ("golang.org/x/net", "v0.25.0"),
                 ("github.com/prometheus/client_golang", "v1.19.1"),
                 ("go.opentelemetry.io/otel", "v1.27.0")]) + "\n```\n")

_ord("if-ord-cargo-lock", "Cargo.lock excerpt after `cargo update -p tokio`:\n\n```toml\n" + "\n".join(
    f'[[package]]\nname = "{n}"\nversion = "{v}"\nsource = "registry+https://github.com/rust-lang/crates.io-index"\nchecksum = "{_oh(64)}"\n'
    for n, v in [("tokio", "1.38.0"), ("serde", "1.0.203"), ("bytes", "1.6.0")]) + "```\n")

_ord("if-ord-pip-hashes", f"""
```
# requirements.txt (generated by pip-compile --generate-hashes)
certifi==2024.6.2 \\
    --hash=sha256:{_oh(64)} \\
    --hash=sha256:{_oh(64)}
idna==3.7 \\
    --hash=sha256:{_oh(64)} \\
    --hash=sha256:{_oh(64)}
requests==2.32.3 \\
    --hash=sha256:{_oh(64)}
```
""")

_gpg = ("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n"
        + "\n".join(_wrap(base64.b64encode(b"\x98\x33\x04" + _bytes(420, _O)).decode()))
        + "\n=" + _s(4, ALNUM, _O) + "\n-----END PGP PUBLIC KEY BLOCK-----")
_fpr = _oh(40).upper()
_ord("if-ord-gpg-public-key", f"""
Import the release signing **public** key to verify packages:

```
$ curl -fsSL https://downloads.acme.io/acme-release.asc | gpg --import
$ gpg --fingerprint releases@acme.io
pub   ed25519 2023-01-09 [SC] [expires: 2026-01-08]
      {" ".join(_fpr[i:i+4] for i in range(0, 40, 4))}
uid           [ unknown] ACME Releases <releases@acme.io>
```

{_gpg}
""")

_ord("if-ord-jwks-public", f"""
Our public JWKS (served at `/.well-known/jwks.json`, cached 1h by clients):

```json
{{
  "keys": [
    {{
      "kty": "RSA",
      "use": "sig",
      "alg": "RS256",
      "kid": "{_oh(16)}",
      "n": "{_b64u(256, _O)}",
      "e": "AQAB"
    }},
    {{
      "kty": "EC",
      "use": "sig",
      "crv": "P-256",
      "kid": "{_oh(16)}",
      "x": "{_b64u(32, _O)}",
      "y": "{_b64u(32, _O)}"
    }}
  ]
}}
```
""")

_ord("if-ord-ci-build-ids", f"""
Flaky test tracker (last 7 days)

| pipeline | run id | commit | result |
|---|---|---|---|
| GitHub Actions `ci.yml` | 9512837461 | {_oh(7)} | ❌ `TestLedgerReplay` timeout |
| GitHub Actions `ci.yml` | 9512904418 | {_oh(7)} | ✅ |
| Buildkite `mobile` | 18823 (`{_uuid(_O)}`) | {_oh(7)} | ❌ simulator boot |
| Jenkins `ios-release` | #412 | {_oh(7)} | ✅ |
| GitLab `pipeline` | 1293384412, job 7201938874 | {_oh(7)} | ✅ |

Artifacts: `gs://acme-ci-artifacts/{_oh(40)}/junit.xml`
""")

_ord("if-ord-ja-rotation-prose", """
## トークンのローテーション手順（概要）

1. Vault の `secret/data/ci/github` に新しいトークンを発行する（値はここに書かない）。
2. 古いトークンは 24 時間だけ有効のまま残し、その後に失効させる。
3. 失効の確認は GitHub の監査ログで `oauth_access.destroy` イベントを検索する。
4. パスワードや API キーをチャットに貼らないこと。貼ってしまった場合はすぐにローテーションする。

参考チケット: SEC-118, SEC-121
""")

_ord("if-ord-de-vault-prose", """
### Zugangsdaten – wo liegt was?

- Datenbank-Passwörter: Vault, Pfad `kv/prod/db/<dienst>`; Lesen nur mit Rolle `dba`.
- API-Schlüssel externer Anbieter: Vault, Pfad `kv/prod/vendors/<anbieter>`.
- Das Passwort für den Notfall-Admin liegt im Tresor im Büro München (Umschlag Nr. 4).
- Befehl zum Nachsehen, **ohne** den Wert auszugeben:
  `vault kv metadata get kv/prod/db/orders`
- Token für die CI kommen per OIDC, es gibt keine statischen Tokens mehr.
""")

_ord("if-ord-zh-key-management", """
## 密钥管理规范（摘要）

1. 所有 AccessKey 必须通过 KMS 托管，禁止写在代码或文档里。
2. 示例配置中一律使用占位符，例如 `ACCESS_KEY_ID=<你的AccessKeyId>`、`ACCESS_KEY_SECRET=${ALIYUN_SECRET}`。
3. 密码长度不少于 16 位，每 90 天轮换一次。
4. 发现泄露时，先禁用密钥，再排查调用日志（ActionTrail）。
5. 负责人：安全组 王磊。
""")

_ord("if-ord-ru-runbook", f"""
## Ранбук: перевыпуск сертификата

1. Проверить срок действия: `openssl s_client -connect api.acme.ru:443 </dev/null | openssl x509 -noout -enddate`
2. Запустить cert-manager вручную: `kubectl -n ingress annotate certificate api-acme-ru cert-manager.io/issue-temporary-certificate="true"`
3. Убедиться, что новый отпечаток SHA-256 отличается от старого: `{_oh(64)}`
4. Пароли и ключи в этом документе не хранятся — только ссылки на Vault.
""")

_ord("if-ord-stripe-publishable", f"""
Frontend checkout config (publishable test key is meant to be public, it ships in the JS bundle):

```ts
export const stripeConfig = {{
  publishableKey: "pk_test_{_s(24, ALNUM, _O)}",
  priceIds: {{
    monthly: "price_{_s(24, ALNUM, _O)}",
    yearly: "price_{_s(24, ALNUM, _O)}",
  }},
  successUrl: "https://acme.io/billing/success?session_id={{CHECKOUT_SESSION_ID}}",
}};
```
Server-side secret key is read from `process.env.STRIPE_SECRET_KEY` only.
""")

_ord("if-ord-crypto-public-chain", f"""
Sepolia deployment record (all public on-chain data):

- deployer address: `0x{_oh(40)}`
- contract: `0x{_oh(40)}`
- deploy tx hash: `0x{_oh(64)}`
- verify tx hash: `0x{_oh(64)}`
- block: 6132884, block hash `0x{_oh(64)}`
- bitcoin testnet faucet address: `tb1q{_s(38, BECH32, _O)}`
- ABI hash (keccak256 of the JSON): `0x{_oh(64)}`
""")

_ord("if-ord-sri-html", f"""
```html
<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <link rel="stylesheet" href="https://cdn.acme.io/ui/3.2.0/ui.min.css"
        integrity="sha384-{_ob64(48)}" crossorigin="anonymous">
  <script src="https://cdn.acme.io/ui/3.2.0/ui.min.js"
          integrity="sha384-{_ob64(48)}" crossorigin="anonymous" defer></script>
  <meta name="theme-color" content="#0d1117">
</head>
<body data-build="{_oh(12)}"></body>
</html>
```
""")

_ord("if-ord-nix-store-paths", f"""
```
$ nix-store -q --references $(which rg)
/nix/store/{_s(32, "0123456789abcdfghijklmnpqrsvwxyz", _O)}-glibc-2.39-52
/nix/store/{_s(32, "0123456789abcdfghijklmnpqrsvwxyz", _O)}-gcc-13.2.0-lib
/nix/store/{_s(32, "0123456789abcdfghijklmnpqrsvwxyz", _O)}-pcre2-10.43
$ nix hash path ./vendor
sha256-{_ob64(32)}
```
""")

_ord("if-ord-configmap", """
```yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: checkout-api
  namespace: checkout
data:
  LOG_LEVEL: info
  DB_HOST: pg-checkout.internal
  DB_NAME: checkout
  DB_PASSWORD_FILE: /var/run/secrets/db/password
  API_TOKEN_SECRET_REF: checkout-api-token
  FEATURE_FLAGS_URL: http://flagd.flags.svc:8013
  OTEL_EXPORTER_OTLP_ENDPOINT: http://otel-collector.observability:4317
```
The password itself is mounted from the `checkout-db` Secret, managed by external-secrets.
""")

_ord("if-ord-vault-commands", """
```
$ export VAULT_ADDR=https://vault.acme.internal:8200
$ vault login -method=oidc role=ops
Complete the login via your OIDC provider. Launching browser to:
    https://sso.acme.io/oauth2/authorize?client_id=vault&response_type=code&scope=openid
Success! You are now authenticated.
$ vault kv get -field=password kv/prod/db/orders | pbcopy   # never echo it
$ export VAULT_TOKEN="$(vault print token)"
$ vault token lookup -format=json | jq '.data.policies'
["default","ops"]
```
""")

_ord("if-ord-already-redacted", """
Pasted from the support ticket (values were already masked by the customer):

```
Authorization: Bearer [REDACTED]
X-Api-Key: ****************
password=********
aws_secret_access_key = <redacted>
token: "•••••••• (hidden)"
DATABASE_URL=postgres://app:***@db:5432/app
```
Nothing to rotate; the customer confirmed they used the masked export.
""")

_ord("if-ord-wireguard-public-peers", f"""
Peer list for the VPN hub (public keys only; private keys never leave the devices):

```
$ sudo wg show wg0 peers
{_ob64(32)}
{_ob64(32)}
{_ob64(32)}
$ sudo wg show wg0 latest-handshakes
{_ob64(32)}	1718881200
```
Public key of the hub for client configs: `{_ob64(32)}`
""")

_ord("if-ord-dockerfile-checksums", f"""
```dockerfile
FROM debian:12.5-slim@sha256:{_oh(64)}
ARG KUBECTL_VERSION=1.30.2
ARG KUBECTL_SHA256={_oh(64)}
RUN curl -fsSLo /usr/local/bin/kubectl https://dl.k8s.io/release/v${{KUBECTL_VERSION}}/bin/linux/amd64/kubectl \\
 && echo "${{KUBECTL_SHA256}}  /usr/local/bin/kubectl" | sha256sum -c - \\
 && chmod +x /usr/local/bin/kubectl
ENV API_KEY="" \\
    PASSWORD_FILE=/run/secrets/password
```
""")

_ord("if-ord-python-traceback-addresses", f"""
```
Traceback (most recent call last):
  File "/srv/app/jobs/reindex.py", line 88, in run
    batch = next(it)
  File "/srv/app/jobs/reindex.py", line 51, in _batches
    yield self._client.scroll(scroll_id=sid, scroll="2m")
elasticsearch.NotFoundError: NotFoundError(404, 'search_phase_execution_exception', 'No search context found for id [{_O.randint(10**6, 10**7)}]')

During handling: <Reindexer object at 0x7f{_oh(10)}>, scroll_id='{_b64u(60, _O)}'
```
The scroll context expired (2m) because the batch size was too big. Reduced to 500.
""")

_ord("if-ord-hosts-table-mac-ipv6", f"""
| host | MAC | IPv6 | serial |
|------|-----|------|--------|
| nas-01 | {":".join(_oh(2) for _ in range(6))} | 2001:db8:4:12::{_oh(4)} | {_s(12, UPPER_ALNUM, _O)} |
| sw-core | {":".join(_oh(2) for _ in range(6))} | 2001:db8:4:1::1 | {_s(12, UPPER_ALNUM, _O)} |
| ap-2og | {":".join(_oh(2) for _ in range(6))} | 2001:db8:4:20::{_oh(4)} | {_s(12, UPPER_ALNUM, _O)} |
| printer | {":".join(_oh(2) for _ in range(6))} | fe80::{_oh(4)}:{_oh(4)}:{_oh(4)}:{_oh(4)} | {_s(12, UPPER_ALNUM, _O)} |

Admin login for all of these is via RADIUS; local admin passwords are in the vault.
""")

_ord("if-ord-compose-substitution", """
```yaml
services:
  db:
    image: postgres:16.3
    environment:
      POSTGRES_USER: app
      POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:?set it in .env}
      POSTGRES_DB: app
    secrets:
      - db_root_password
  api:
    image: ghcr.io/acme/api:latest
    environment:
      DATABASE_URL: postgres://app:${POSTGRES_PASSWORD}@db:5432/app
      API_TOKEN: ${API_TOKEN}
secrets:
  db_root_password:
    file: ./secrets/db_root_password.txt
```
""")

_ord("if-ord-es-notas-seguridad", f"""
## Notas de la auditoría de seguridad (julio)

- No se encontraron contraseñas en el repositorio; el escáner marcó 3 falsos positivos:
  - un hash SHA-1 de commit (`{_oh(40)}`),
  - un UUID de cliente (`{_uuid(_O)}`),
  - una cadena base64 de un icono SVG.
- Recomendación: usar `git-secrets` en el pre-commit y rotar los tokens cada 90 días.
- El token de despliegue se obtiene por OIDC; no hay token estático.
""")

_ord("if-ord-openapi-security-schemes", """
```yaml
components:
  securitySchemes:
    bearerAuth:
      type: http
      scheme: bearer
      bearerFormat: JWT
    apiKeyHeader:
      type: apiKey
      in: header
      name: X-Api-Key
    oauth2:
      type: oauth2
      flows:
        clientCredentials:
          tokenUrl: https://auth.acme.io/oauth/token
          scopes:
            orders:read: Read orders
            orders:write: Create and modify orders
security:
  - bearerAuth: []
```
Example request in the docs uses `Authorization: Bearer <access_token>`.
""")

_ord("if-ord-kms-encrypted-blob-sops", f"""
SOPS-encrypted values are safe to commit (ciphertext only; key is in KMS):

```yaml
db:
    password: ENC[AES256_GCM,data:{_ob64(18)},iv:{_ob64(32)},tag:{_ob64(16)},type:str]
sops:
    kms:
        - arn: arn:aws:kms:eu-central-1:210987654321:key/{_uuid(_O)}
          created_at: "2024-05-02T09:14:55Z"
    age:
        - recipient: age1{_s(58, BECH32, _O)}
    lastmodified: "2024-05-02T09:14:57Z"
    mac: ENC[AES256_GCM,data:{_ob64(32)},iv:{_ob64(32)},tag:{_ob64(16)},type:str]
    version: 3.8.1
```
""")

_ord("if-ord-helm-lock-and-chart-digest", f"""
```yaml
# Chart.lock
dependencies:
- name: postgresql
  repository: oci://registry-1.docker.io/bitnamicharts
  version: 15.5.2
- name: redis
  repository: oci://registry-1.docker.io/bitnamicharts
  version: 19.5.0
digest: sha256:{_oh(64)}
generated: "2024-06-11T08:41:02.118274+02:00"
```
""")

_ord("if-ord-sql-migration-ids", f"""
```
$ psql -c "select version, dirty from schema_migrations order by version desc limit 4"
    version     | dirty
----------------+-------
 20240611084102 | f
 20240604153311 | f
 20240529101500 | f
 20240521090012 | f
$ psql -c "select id, email_hash from users where id = '{_uuid(_O)}'"
                  id                  |                            email_hash
--------------------------------------+------------------------------------------------------------------
 {_uuid(_O)} | {_oh(64)}
```
`email_hash` is sha256(lowercased email) — used for deduplication only.
""")

_ord("if-ord-mixed-chat-no-secret", f"""
**[09:12] lea:** the token refresh is broken again?
**[09:13] sam:** no, the refresh works, it's the clock skew on worker-3 (ntp was off by 4 min)
**[09:13] sam:** see trace `{_oh(32)}`
**[09:15] lea:** ok. do we need to rotate anything?
**[09:16] sam:** nope, nothing leaked. I just restarted chrony. commit with the alert: {_oh(10)}
**[09:17] lea:** 👍 closing INC-2311
""")


# sanity: keep the module importable without side effects beyond building lists
del _t
