"""Redaction keeps what is random but public, and finds what only a context or a structure
shows: the guards and detectors added after a third independent corpus (corpus_dev2). Every
value here is generated from a fixed seed, in no corpus; each test fails on the code before
them."""

from __future__ import annotations

import base64
import json
import random
import string

import pytest
from carryd.index.redact import MARKER_PREFIX, find_secrets, redact

from tests.secret_corpus import leaks

_random = random.Random(2_2026_12)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


def _draw(alphabet: str, length: int) -> str:
    while True:
        value = "".join(_random.choice(alphabet) for _ in range(length))
        classes = [
            any(c.isdigit() for c in value),
            any(c.isupper() for c in value),
            any(c.islower() for c in value),
        ]
        if sum(classes) >= 2:
            return value


def _b64(size: int) -> str:
    return base64.b64encode(_random.randbytes(size)).decode()


def _b64_padded_plain(size: int) -> str:
    """A padded base64 value without `+` or `/` (a quarter of 32-byte values look so)."""
    while True:
        value = _b64(size)
        if value.endswith("=") and "+" not in value and "/" not in value:
            return value


def _b64url(size: int) -> str:
    while True:
        value = base64.urlsafe_b64encode(_random.randbytes(size)).decode().rstrip("=")
        if "-" in value or "_" in value:
            return value


def _assert_redacted(text: str, *secrets: str) -> None:
    redacted = redact(text)
    for secret in secrets:
        assert leaks(secret, redacted) is None, redacted


def _checksums() -> str:
    names = [f"tool-cli_2.7.0_{system}.tar.gz" for system in ("linux_arm64", "darwin_amd64")]
    listing = "\n".join(f"{_draw(HEX, 64)}  {name}" for name in names)
    checked = "\n".join(f"{name}: OK" for name in names)
    return f"$ cat SHA256SUMS\n{listing}\n$ sha256sum -c SHA256SUMS\n{checked}"


def _peers() -> str:
    peers = "\n".join(_b64_padded_plain(32) for _ in range(2))
    return (
        f"$ wg show wg0 peers\n{peers}\n{_b64(32)}\n"
        f"$ wg show wg0 latest-handshakes\n{_b64_padded_plain(32)}\t1764662400"
    )


def _jwks() -> str:
    keys = [
        {"kty": "RSA", "kid": _draw(HEX, 16), "n": _b64url(256), "e": "AQAB"},
        {"kty": "EC", "crv": "P-256", "x": _b64url(32), "y": _b64url(32)},
    ]
    return json.dumps({"keys": keys}, indent=2)


def _sops() -> str:
    return (
        f"db:\n    password: ENC[AES256_GCM,data:{_draw(ALNUM, 24)},"
        f"iv:{_b64_padded_plain(32)},tag:{_b64(16)},type:str]"
    )


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(_checksums(), id="file-names-beside-digests"),
        pytest.param(_peers(), id="padded-base64-public-keys-listed"),
        pytest.param(_jwks(), id="jwks-public-members"),
        pytest.param(_sops(), id="sops-iv"),
        pytest.param("POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:?set it in .env}", id="unset-message"),
        pytest.param(
            f"while scrolling: scroll_id='{_draw(ALNUM + '_-', 80)}'", id="value-named-an-id"
        ),
        pytest.param(f'"traceId": "{_draw(ALNUM, 40)}"', id="trace-id-json"),
    ],
)
def test_what_is_random_but_public_survives(text: str) -> None:
    assert redact(text) == text


def test_a_jwk_keeps_its_public_members_and_loses_its_private_ones() -> None:
    private = _b64url(256)
    key = {"kty": "RSA", "n": _b64url(256), "e": "AQAB", "d": private}
    text = json.dumps(key)
    redacted = redact(text)
    assert leaks(private, redacted) is None
    assert key["n"] in redacted


_SESSION = _draw(ALNUM, 40)
_WG_PRIVATE = _b64_padded_plain(32)
_DEFAULT = _draw(ALNUM, 14) + "!7"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        pytest.param(f"session_id='{_SESSION}'", _SESSION, id="session-id"),
        pytest.param(f"[Interface]\nPrivateKey = {_WG_PRIVATE}", _WG_PRIVATE, id="wg-private"),
        pytest.param(f"DB_PASSWORD: ${{DB_PASSWORD:-{_DEFAULT}}}", _DEFAULT, id="unset-default"),
    ],
)
def test_the_guards_keep_no_secret(text: str, secret: str) -> None:
    """A session's id, a private key named so, a password given as a default stay secret."""
    _assert_redacted(text, secret)


def _b64_json(value: object) -> str:
    return base64.b64encode(json.dumps(value).encode()).decode().rstrip("=")


def test_base64_of_json_without_secret_names_survives() -> None:
    text = "config: " + _b64_json({"feature_flags": {"beta_search": True}, "rollout": 40})
    assert redact(text) == text


def test_base64_of_json_that_names_a_secret_is_redacted() -> None:
    auth = base64.b64encode(f"ci:{_draw(ALNUM, 16)}".encode()).decode()
    blob = _b64_json({"auths": {"registry.example": {"auth": auth}}})
    _assert_redacted(f"pull secret {blob}", blob)


@pytest.mark.parametrize(
    "text",
    [
        'channel.basic_publish(exchange="events", routing_key="invoice.paid.v2")',
        "the routing key = user.42.updated",
        "routing_key: orders.created",
    ],
)
def test_a_routing_key_made_of_words_survives(text: str) -> None:
    assert redact(text) == text


_ROUTING = [_draw(HEX, 32) for _ in range(12)]


@pytest.mark.parametrize("key", _ROUTING)
def test_a_random_routing_key_is_an_integration_key(key: str) -> None:
    """PagerDuty's Events API takes its integration key as `routing_key`; twelve random
    32-hex keys, since a bar on entropy refused one in five of them."""
    _assert_redacted(f'-d \'{{"routing_key":"{key}","event_action":"trigger"}}\'', key)


_APP_KEY = _draw(HEX, 40)
_DB_PASSWORD = _draw(ALNUM, 12) + "#4"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        pytest.param(f"Anwendungsschlüssel = `{_APP_KEY}`", _APP_KEY, id="de-compound-key"),
        pytest.param(f"Datenbankpasswort: {_DB_PASSWORD}", _DB_PASSWORD, id="de-compound-pw"),
        pytest.param(
            f"Het beheerderswachtwoord is {_DB_PASSWORD}", _DB_PASSWORD, id="nl-compound-pw"
        ),
    ],
)
def test_a_label_that_ends_a_compound_word_names_its_secret(text: str, secret: str) -> None:
    _assert_redacted(text, secret)


def test_a_compound_word_without_a_value_is_kept() -> None:
    text = "Der Anwendungsschlüssel liegt im Tresor; das Datenbankpasswort wird rotiert."
    assert redact(text) == text


def test_a_long_secret_carried_to_its_token_end_keeps_a_joined_character_whole() -> None:
    body = "\n".join(_b64(48) for _ in range(8))
    text = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----x\u200d |"
    for secret in find_secrets(text):
        assert text[secret.end - 1] != "\u200d", secret
    assert MARKER_PREFIX in redact(text)


def _key(length: int) -> str:
    """A generated key of all three character classes."""
    while True:
        value = _draw(ALNUM, length)
        if any(c.isdigit() for c in value) and value.lower() != value and value.upper() != value:
            return value


_KEY_ID, _KEY_SECRET, _COMMUNITY = _key(24), _key(30), _key(12) + "7"


@pytest.mark.parametrize(
    ("text", "secrets"),
    [
        pytest.param(
            f"objutil config -e oss.example.test -i {_KEY_ID} -k {_KEY_SECRET}",
            (_KEY_ID, _KEY_SECRET),
            id="unknown-tool-short-flags",
        ),
        pytest.param(f"acmectl push --api={_KEY_SECRET} ./dist", (_KEY_SECRET,), id="long-flag"),
        pytest.param(
            f"snmpwalk -v2c -c {_COMMUNITY} 10.1.0.2 IF-MIB::ifOperStatus",
            (_COMMUNITY,),
            id="snmp-community",
        ),
    ],
)
def test_a_generated_key_passed_as_a_flag_is_redacted(text: str, secrets: tuple[str, ...]) -> None:
    _assert_redacted(text, *secrets)


@pytest.mark.parametrize(
    "text",
    [
        "docker run --name web-7d9f8b6c5-x2lkq -p 8080:80 nginx:1.27",
        f"git show --stat {_draw(HEX, 40)}",
        f"aws kms describe-key --key-id {_key(24)}",
        f"gh run view --job-id {_key(22)} --log",
        "pytest -k TestRedactionGuardsAndMore -x",
        "ffmpeg -i Holiday2024SummerTrip.mp4 -c copy out.mkv",
        "snmpwalk -v2c -c public 10.1.0.2 system",
    ],
)
def test_a_command_line_flag_with_a_public_value_is_kept(text: str) -> None:
    assert redact(text) == text


def test_backup_codes_under_their_label_are_redacted() -> None:
    codes = [f"{_random.randint(1000, 9999)}-{_random.randint(1000, 9999)}" for _ in range(4)]
    text = "MFA for the shared account.\n\nBackup codes:\n" + "\n".join(f"- {c}" for c in codes)
    _assert_redacted(text, *codes)


def test_numbers_in_a_list_without_a_codes_label_are_kept() -> None:
    text = "Ports to open:\n- 8080-8089\n- 9000-9010\n\nRelease notes:\n- 2024-06\n- 1234-5678"
    assert redact(text) == text


def _grouped(*sizes: int) -> str:
    while True:
        groups = [_draw(string.ascii_uppercase + string.digits, size) for size in sizes]
        if sum(any(c.isdigit() for c in g) and not g.isdigit() for g in groups) >= 2:
            return "-".join(groups)


_LICENSE = _grouped(4, 6, 6, 6)


def test_a_license_key_answered_in_a_chat_is_redacted() -> None:
    text = f"> ann: do you still have the profiler licence?\n>\n> bo: {_LICENSE}\n> ann: thanks"
    _assert_redacted(text, _LICENSE)


@pytest.mark.parametrize(
    "text",
    [
        f"request {_draw(HEX, 8).upper()}-{_draw(HEX, 4).upper()}-4{_draw(HEX, 3).upper()}-"
        f"A{_draw(HEX, 3).upper()}-{_draw(HEX, 12).upper()} failed; licence check skipped",
        f"order {_grouped(4, 6, 6, 6)} shipped to the warehouse",
        "licensed parts: ABCD-EFGH-IJKL-MNOP and 2024-0611-0001-0002",
    ],
)
def test_grouped_capitals_without_a_license_word_or_mix_are_kept(text: str) -> None:
    assert redact(text) == text


_HUMAN = "Harbor" + str(_random.randint(100, 999)) + "?lantern" + str(_random.randint(10, 99))


@pytest.mark.parametrize(
    "text",
    [
        f'- 13:09 Jo logged into the NAS web UI as admin, "{_HUMAN}" (from the sticker)',
        f"ich habe mich als root mit `{_HUMAN}` angemeldet",
        f"我用 admin / “{_HUMAN}” 登录了路由器",
    ],
)
def test_a_quoted_password_after_a_login_is_redacted(text: str) -> None:
    _assert_redacted(text, _HUMAN)


@pytest.mark.parametrize(
    "text",
    [
        'logged in as "ann.smith2@corp.example" via SSO',
        'signed in to "grafana.prod.v2" with the "Viewer2024" role',
        "log in with `~/.ssh/id_ed25519` and run `make deploy`",
        'after login the banner says "Welcome" and "Version 3.2.1"',
        # German "Log in logs/…" (the log is in): an Airflow run id is no password
        "Lauf `scheduled__2024-11-30T23:30:00+00:00` fehlgeschlagen (Log in logs/run.md)",
    ],
)
def test_a_login_without_a_password_is_kept(text: str) -> None:
    assert redact(text) == text


_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _base58(first: str, length: int) -> str:
    while True:
        value = first + _draw(_B58, length - 1)
        if value.lower() != value and value.upper() != value:
            return value


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(f"send the refund to {_base58('1', 34)} (BTC)", id="bitcoin-address"),
        pytest.param(f"Solana program id {_base58('7', 44)} deployed", id="program-id-in-prose"),
        pytest.param(f"x-amz-request-id: 58904DBA41ECCCC3\nx-amz-id-2: {_key(60)}", id="amz-id-2"),
    ],
)
def test_an_address_or_an_id_survives(text: str) -> None:
    assert redact(text) == text


def test_a_labelled_password_shaped_like_an_address_is_redacted() -> None:
    password = _base58("3", 30)
    _assert_redacted(f"password: {password}", password)


def test_a_session_id_in_prose_stays_secret() -> None:
    session = _key(40)
    _assert_redacted(f"the session id {session} was in the log", session)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('stored in 1Password: "Acme prod API"', id="vault-name"),
        pytest.param("token: expires_in=3600, token_type=Bearer", id="assignment-as-value"),
        pytest.param("db_password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256", id="yaml-tag"),
        pytest.param("MasterUserPassword: !Ref DbPassword", id="cloudformation-tag"),
        pytest.param(
            "aws ecr get-login-password | docker login --username AWS --password-stdin "
            "123456789012.dkr.ecr.eu-west-1.amazonaws.com",
            id="password-stdin",
        ),
        pytest.param('We logged in as admin and saw the "Dashboard-v2" page', id="login-name"),
    ],
)
def test_what_stands_where_a_secret_would_and_is_none_survives(text: str) -> None:
    assert redact(text) == text


_ASSIGNED = _draw(ALNUM, 10) + "=9" + _draw(ALNUM, 4)


def test_a_password_holding_an_equals_sign_is_still_redacted() -> None:
    _assert_redacted(f"password: {_ASSIGNED}", _ASSIGNED)
