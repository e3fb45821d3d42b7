"""Redaction by class: credential context in many languages, command lines, YAML block scalars,
tables, token shapes no rule lists, key material; and what must survive (public blocks,
digests, ids). Secrets here are generated from a fixed seed, in no corpus."""

from __future__ import annotations

import base64
import random
import string

import pytest
from carryd.index.redact import redact

from tests.secret_corpus import leaks

_random = random.Random(22_2026)
ALNUM = string.ascii_letters + string.digits


def _draw(alphabet: str, length: int) -> str:
    while True:
        value = "".join(_random.choice(alphabet) for _ in range(length))
        if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            return value


def _password() -> str:
    return _draw(ALNUM, 11) + _random.choice("!%*-_") + _random.choice(string.digits)


def _assert_redacted(text: str, *secrets: str) -> None:
    redacted = redact(text)
    for secret in secrets:
        assert leaks(secret, redacted) is None, redacted


P = [_password() for _ in range(40)]
T = [_draw(ALNUM, 40) for _ in range(20)]


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        pytest.param(f"Le mot de passe du routeur : {P[0]}", P[0], id="fr"),
        pytest.param(f"Das Kennwort für den Build-Server lautet: {P[1]}", P[1], id="de"),
        pytest.param(f"La contraseña de la base es {P[2]}", P[2], id="es"),
        pytest.param(f"Senha do painel: {P[3]}", P[3], id="pt"),
        pytest.param(f"Пароль от сервера: {P[4]}", P[4], id="ru"),
        pytest.param(f"本番DBのパスワード：{P[5]}", P[5], id="ja"),
        pytest.param(f"관리자 비밀번호: {P[6]}", P[6], id="ko"),
        pytest.param(f"Heslo k routeru {P[7]} neměnit", P[7], id="cs-no-colon"),
        pytest.param(f"Sunucu şifresi `{P[8]}` olarak ayarlandı", P[8], id="tr-inline-code"),
        pytest.param(f"La password del NAS è {P[9]}", P[9], id="it"),
        pytest.param(f"Het wachtwoord (tijdelijk): {P[10]}", P[10], id="nl-filler"),
        pytest.param(f"Hasło do VPN: {P[11]}", P[11], id="pl"),
        pytest.param(f"Jeton d'API (90 jours) : {T[0]}", T[0], id="fr-token"),
        pytest.param(f"API-Schlüssel: {T[1]}", T[1], id="de-key"),
        pytest.param(f"Токен доступа: {T[2]}", T[2], id="ru-token"),
        pytest.param(f"Clave de API = {T[3]}", T[3], id="es-key"),
    ],
)
def test_a_label_in_many_languages_names_its_secret(text: str, secret: str) -> None:
    _assert_redacted(text, secret)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        pytest.param(f"mysql -h db -u app -p{P[12]} shop", P[12], id="mysql-attached"),
        pytest.param(f"mysqldump -uroot -p'{P[13]}' --all-databases", P[13], id="mysqldump"),
        pytest.param(f"sshpass -p {P[14]} ssh ops@host", P[14], id="sshpass"),
        pytest.param(f"redis-cli -h cache -p 6380 -a {P[15]} PING", P[15], id="redis-cli"),
        pytest.param(f"PGPASSWORD={P[16]} psql -h db -U app", P[16], id="env-prefix"),
        pytest.param(f"wget --http-password={P[17]} https://x.test/f", P[17], id="long-flag"),
        pytest.param(f"keytool -list -keystore a.jks -storepass {P[18]}", P[18], id="storepass"),
        pytest.param(f"openssl rsa -in k.pem -passin pass:{P[19]}", P[19], id="openssl-pass"),
        pytest.param(f"smbclient //fs/share -U 'CORP\\ann%{P[20]}'", P[20], id="user-percent"),
        pytest.param(f"ldapsearch -x -D cn=admin -w {P[21]} -b dc=x", P[21], id="ldap-w"),
        pytest.param(f"docker login -u ci -p {P[22]} registry.test", P[22], id="docker-login"),
        pytest.param(f"vault login {T[4]}", T[4], id="login-token"),
        pytest.param(f"curl -H 'X-Api-Key: {T[5]}' https://api.test", T[5], id="api-key-header"),
        pytest.param(f"Authorization: Token {T[6]}", T[6], id="auth-any-scheme"),
        pytest.param(f"curl -b 'sessionid={T[7]}' https://app.test", T[7], id="cookie-flag"),
        pytest.param(f'smtp.login("ops@x.test", "{P[23]}")', P[23], id="login-call"),
        pytest.param(f"requests.get(url, auth=('bot', '{P[24]}'))", P[24], id="auth-tuple"),
        pytest.param(f'os.getenv("DEPLOY_TOKEN", "{P[28]}")', P[28], id="quoted-name-pair"),
        pytest.param(f"aws configure set aws_secret_access_key {T[8]}", T[8], id="name-space"),
        pytest.param(f"requirepass {P[29]}", P[29], id="redis-conf"),
        pytest.param(
            f'$pw = ConvertTo-SecureString "{P[30]}" -AsPlainText -Force', P[30], id="powershell"
        ),
        pytest.param(
            f"echo '{P[31]}' | docker login -u ci --password-stdin", P[31], id="password-stdin"
        ),
        pytest.param(f"net user svc_backup {P[32]} /add", P[32], id="net-user"),
        pytest.param(f"db.internal:5432:shop:app:{P[33]}", P[33], id="pgpass-line"),
    ],
)
def test_a_secret_on_a_command_line_is_redacted(text: str, secret: str) -> None:
    _assert_redacted(text, secret)


@pytest.mark.parametrize(
    "text",
    [
        "redis-cli -h cache -p 6380 PING",
        "Run `mysql -u root -p` and type the password at the prompt.",
        "git push -u origin main && docker run -u 1000:1000 app",
        "psql -h db -U app -W",
        "openssl pkcs12 -in a.p12 -passin env:P12_PASS -nokeys",
        "helm upgrade app ./chart --set image.tag=1.4.2 --wait",
    ],
)
def test_a_command_line_without_a_secret_is_kept(text: str) -> None:
    assert redact(text) == text


def test_a_yaml_block_scalar_under_a_secret_name_is_redacted() -> None:
    first, second = _draw(ALNUM + "-_", 40), _draw(ALNUM + "-_", 40)
    text = (
        f"db:\n  password: |\n    {P[25]}\n  host: db\n"
        f"auth:\n  client_secret: >-\n    {first}\n    {second}\n  url: https://x"
    )
    redacted = redact(text)
    _assert_redacted(text, P[25], first, second)
    assert "  host: db" in redacted and "  url: https://x" in redacted


def test_a_table_column_named_for_a_secret_is_redacted() -> None:
    text = (
        "| host | user | Passwort |\n|---|---|---|\n"
        f"| db1 | app | {P[26]} |\n| db2 | ro | {P[27]} |"
    )
    _assert_redacted(text, P[26], P[27])
    assert "| db1 | app |" in redact(text)


@pytest.mark.parametrize(
    "token",
    [
        "hvs." + _draw(ALNUM, 90),
        "glpat-" + _draw(ALNUM + "-_", 20),
        "ntn_" + _draw(ALNUM, 46),
        "xoxb-" + "2048-" + "4096-" + _draw(ALNUM, 24),
        "GOCSPX-" + _draw(ALNUM + "-_", 28),
        "dapi" + _draw("0123456789abcdef", 32),
        "zqx_live_" + _draw(ALNUM, 40),  # a vendor no rule lists: the shape is enough
        "ACME-SECRET-" + _draw(string.ascii_uppercase + string.digits, 48),
        _draw(ALNUM, 48),  # no prefix at all, all three character classes
    ],
)
def test_a_token_is_found_by_its_shape(token: str) -> None:
    _assert_redacted(f"- tried again with {token} and it worked", token)


def test_the_secret_path_of_a_webhook_url_is_redacted() -> None:
    secret = _draw("0123456789abcdef", 32)
    text = f"Teams: https://acme.webhook.office.com/webhookb2/a1@b2/IncomingWebhook/{secret}/c3"
    _assert_redacted(text, secret)


def test_key_material_is_redacted() -> None:
    words = "ranch ozone tiger vivid usual siren clap brief echo mercy abuse orbit".split()
    ethereum = "0x" + _draw("0123456789abcdef", 64)
    solana = "[" + ",".join(str(_random.randint(0, 255)) for _ in range(64)) + "]"
    jwk = base64.urlsafe_b64encode(_random.randbytes(32)).decode().rstrip("=")
    body = "\n".join(_draw(ALNUM + "+/", 64) for _ in range(4))
    pgp = (
        f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{body}\n=Ab1c\n"
        "-----END PGP PRIVATE KEY BLOCK-----"
    )
    text = (
        f"Seed phrase for the test wallet:\n{' '.join(words[:6])}\n{' '.join(words[6:])}\n\n"
        f"deployer private key: {ethereum}\nkeypair.json: {solana}\n"
        f'{{"kty":"oct","k":"{jwk}"}}\n{pgp}'
    )
    _assert_redacted(text, " ".join(words[:6]), " ".join(words[6:]), ethereum, solana, jwk)
    _assert_redacted(text, *body.splitlines())


def _b64_lines(raw: bytes) -> str:
    encoded = base64.b64encode(raw).decode()
    return "\n".join(encoded[i : i + 64] for i in range(0, len(encoded), 64))


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(
            "-----BEGIN CERTIFICATE-----\n"
            + _b64_lines(b"0\x82\x03" + _random.randbytes(300))
            + "\n-----END CERTIFICATE-----",
            id="certificate",
        ),
        pytest.param(
            "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n"
            + _b64_lines(_random.randbytes(240))
            + "\n=Xy9a\n-----END PGP PUBLIC KEY BLOCK-----",
            id="pgp-public",
        ),
        pytest.param(
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + _draw(ALNUM + "+/", 43) + " ann@laptop",
            id="ssh-public-line",
        ),
        pytest.param(
            "![logo](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA"
            + base64.b64encode(_random.randbytes(120)).decode()
            + ")",
            id="data-uri",
        ),
        pytest.param(
            "logo.png as base64:\n"
            + _b64_lines(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + _random.randbytes(200)),
            id="wrapped-png",
        ),
    ],
)
def test_a_public_block_is_kept(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    "text",
    [
        f"commit {_draw('0123456789abcdef', 40)}\nAuthor: Ann <ann@x.test>\n\n    fix the cache",
        f"Merge {_draw('0123456789abcdef', 7)} into {_draw('0123456789abcdef', 7)}",
        f"request 3f1c2d4e-9a8b-4c7d-8e6f-{_draw('0123456789abcdef', 12)} failed",
        f"sha256:{_draw('0123456789abcdef', 64)} pulled",
        f'integrity="sha512-{base64.b64encode(_random.randbytes(64)).decode()}"',
        "role arn:aws:iam::123456789012:role/deployer and key arn:aws:kms:eu-west-1:"
        "123456789012:key/3f1c2d4e-9a8b-4c7d-8e6f-0a1b2c3d4e5f",
        f"The build cache key is {base64.b64encode(_random.randbytes(30)).decode()} today.",
        "Upgraded to v2.14.0-rc.3+build.20261202 and python 3.12.7.",
        f"event 01J{_draw('0123456789ABCDEFGHJKMNPQRSTVWXYZ', 23)} stored",
        f"pinned as Qm{_draw('123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz', 44)}",
        f"see <!-- mem_{_draw('0123456789abcdef', 32)} --> for the decision",
        "getUserAuthenticationTokenForRequest2 and parseHttpResponseHeaderValues3 were renamed",
        "The token expires after an hour; the password policy asks for 14 characters.",
        "API key: stored in the vault under payments-prod",
        "| setting | value |\n|---|---|\n| password_min_length | 14 |",
        "labels such as `password:`, `mot de passe :`, `密码：` and `비밀번호:` are found",
    ],
)
def test_what_must_survive_survives(text: str) -> None:
    assert redact(text) == text
