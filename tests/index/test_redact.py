"""Redaction: planted credentials of every kind disappear, ordinary developer prose stays."""

from __future__ import annotations

import subprocess
import sys

import pytest
from carryd.index.redact import MARKER_PREFIX, Secret, _attaches, find_secrets, redact
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.secret_corpus import CORPUS, ORDINARY, Case, leaks

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi0+p1kzzlvH3s0pQv0N1XJQAAb\n"
    "W8rR2kBKj1jZq5x0XyqmvN1vP9Y6c3L0gkXoZlZbVZ8oQ0kK2s7Fq2s0w9ZV1sJQ\n"
    "-----END RSA PRIVATE KEY-----"
)
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            f"export AWS_ACCESS_KEY_ID={AWS_KEY}\nexport AWS_SECRET_ACCESS_KEY={AWS_SECRET}",
            "export AWS_ACCESS_KEY_ID=[redacted:aws_access_key]\n"
            "export AWS_SECRET_ACCESS_KEY=[redacted:aws_secret_key]",
            id="aws-env",
        ),
        pytest.param(
            f"[default]\naws_access_key_id = {AWS_KEY}\naws_secret_access_key = {AWS_SECRET}\n",
            "[default]\naws_access_key_id = [redacted:aws_access_key]\n"
            "aws_secret_access_key = [redacted:aws_secret_key]\n",
            id="aws-credentials-file",
        ),
        pytest.param(
            f"the key {AWS_KEY} and its secret {AWS_SECRET} leaked",
            "the key [redacted:aws_access_key] and its secret [redacted:aws_secret_key] leaked",
            id="aws-in-prose",
        ),
        pytest.param(
            f"push with {GITHUB_TOKEN} then", "push with [redacted:github_token] then", id="github"
        ),
        pytest.param(
            "pat github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGH1234 ok",
            "pat [redacted:github_token] ok",
            id="github-fine-grained",
        ),
        pytest.param(
            f"before\n{PRIVATE_KEY}\nafter", "before\n[redacted:private_key]\nafter", id="pem-block"
        ),
        pytest.param(
            "```\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n\n"
            "AAAAC3NzaC1lZDI1NTE5\n-----END OPENSSH PRIVATE KEY-----\n```",
            "```\n[redacted:private_key]\n```",
            id="openssh-block-with-blank-line",
        ),
        pytest.param(
            "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n(truncated paste)",
            "[redacted:private_key]",
            id="pem-without-end",
        ),
        pytest.param(
            "db_password = hunter2", "db_password = [redacted:password]", id="password-eq"
        ),
        pytest.param(
            'password: "correct horse battery"', 'password: "[redacted:password]"', id="pw-quoted"
        ),
        pytest.param("PASSWORD=s3cr3t!", "PASSWORD=[redacted:password]", id="password-env"),
        pytest.param(
            "--password=abc12 --user x", "--password=[redacted:password] --user x", id="flag"
        ),
        pytest.param("password: hunter\nnext", "password: [redacted:password]\nnext", id="pw-eol"),
        pytest.param(
            "数据库密码：abc123。", "数据库密码：[redacted:password]。", id="mima-fullwidth"
        ),
        pytest.param("密码是 Passw0rd 记得改", "密码是 [redacted:password] 记得改", id="mima-shi"),
        pytest.param(
            "curl -H 'Authorization: Bearer abcdef123456' https://api.example.com",
            "curl -H 'Authorization: Bearer [redacted:bearer_token]' https://api.example.com",
            id="bearer-header",
        ),
        pytest.param(
            "Authorization: Basic dXNlcjpwYXNzd29yZA==",
            "Authorization: Basic [redacted:basic_auth]",
            id="basic-header",
        ),
        pytest.param(f"token: {JWT}", "token: [redacted:jwt]", id="jwt"),
        pytest.param(
            "OPENAI_API_KEY=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
            "OPENAI_API_KEY=[redacted:openai_key]",
            id="openai",
        ),
        pytest.param(
            "key sk-ant-api03-AbCdEf0123456789_xyzXYZ-abcdefgh end",
            "key [redacted:anthropic_key] end",
            id="anthropic",
        ),
        pytest.param(
            "slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
            "slack [redacted:slack_token]",
            id="slack",
        ),
        pytest.param(
            "clone https://deploy:s3cretpw@git.example.com/repo.git",
            "clone https://deploy:[redacted:basic_auth]@git.example.com/repo.git",
            id="url-credentials",
        ),
        pytest.param(
            'config = {"api_key": "a8f5f167f44f4964e6c998dee827110c"}',
            'config = {"api_key": "[redacted:generic_api_key]"}',
            id="generic-json",
        ),
        pytest.param(
            "clientSecret: q1w2e3r4t5y6", "clientSecret: [redacted:generic_api_key]", id="camel"
        ),
    ],
)
def test_secrets_are_replaced_by_their_kind(text: str, expected: str) -> None:
    assert redact(text) == expected
    assert redact(expected) == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("We fixed the flaky deploy; see lib/index.js:42 and v2.2.6.", id="prose"),
        pytest.param("anchor <!-- mem_0123456789abcdef0123456789abcdef -->", id="mem-id"),
        pytest.param(
            "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 matches",
            id="sha256",
        ),
        pytest.param("commit 9fceb02d0ae598e95dc970b74767f19372d61af8 fixed it", id="sha1"),
        pytest.param("The socket died with ERR_CONN_RESET (code ECONNRESET).", id="error-codes"),
        pytest.param("token: ERR_CONN_RESET", id="error-code-as-value"),
        pytest.param(
            "Paths: src/components/Button/index.tsx, ~/.config/carryd/config.toml", id="paths"
        ),
        pytest.param("password: ${DB_PASSWORD}", id="env-placeholder"),
        pytest.param("password: <your password>", id="angle-placeholder"),
        pytest.param("password = os.environ['DB_PASSWORD']", id="code-expression"),
        pytest.param("The password: see the vault entry for prod.", id="password-prose"),
        pytest.param("忘记密码了怎么办？密码：请看保险库", id="mima-prose"),
        pytest.param("Bearer tokens expire after an hour.", id="bearer-prose"),
        pytest.param("Authorization: Bearer $TOKEN", id="bearer-variable"),
        pytest.param("max_tokens = 4096 and token_count: 12", id="token-settings"),
        pytest.param("uuid 123e4567-e89b-12d3-a456-426614174000 ok", id="uuid"),
        pytest.param(
            "mail alice@example.com or visit https://github.com/org/repo/pull/7", id="urls"
        ),
        pytest.param("private key 存在 ~/.ssh/id_ed25519，不要提交。", id="key-path"),
        pytest.param("ASIA trip notes: Tokyo, Osaka.", id="asia-word"),
        pytest.param("", id="empty"),
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert find_secrets(text) == []
    assert redact(text) == text


def test_find_secrets_reports_kind_and_span_in_order() -> None:
    text = f"a {GITHUB_TOKEN} b {AWS_KEY}"
    secrets = find_secrets(text)
    start = text.index(GITHUB_TOKEN)
    aws_start = text.index(AWS_KEY)
    assert secrets == [
        Secret("github_token", start, start + len(GITHUB_TOKEN)),
        Secret("aws_access_key", aws_start, aws_start + len(AWS_KEY)),
    ]


def test_a_private_key_block_is_redacted_whole() -> None:
    text = f"notes\n\n{PRIVATE_KEY}\n\nmore notes"
    (secret,) = find_secrets(text)
    assert (secret.kind, text[secret.start : secret.end]) == ("private_key", PRIVATE_KEY)
    assert "MII" not in redact(text)


def test_overlapping_findings_merge_into_one_marker() -> None:
    assert redact(f"api_key = {GITHUB_TOKEN}") == "api_key = [redacted:github_token]"


def test_redaction_is_idempotent_on_a_mixed_document() -> None:
    text = "\n".join(
        [f"aws {AWS_KEY} {AWS_SECRET}", GITHUB_TOKEN, PRIVATE_KEY, "password: x9", f"t {JWT}"]
    )
    once = redact(text)
    assert redact(once) == once
    for planted in (AWS_KEY, AWS_SECRET, GITHUB_TOKEN, "MIIEpAIBAAKCAQEA", "x9", JWT[:20]):
        assert planted not in once


def test_loading_the_detectors_reads_no_file() -> None:
    """detect-secrets' plugins are imported for their patterns only: no settings or data files."""
    code = (
        "import sys\n"
        "opened = []\n"
        "sys.addaudithook(lambda event, args: opened.append(str(args[0])) "
        "if event == 'open' else None)\n"
        "from carryd.index.redact import redact\n"
        "redact('AKIAIOSFODNN7EXAMPLE')\n"
        "print('\\n'.join(p for p in opened if not p.endswith(('.py', '.pyc')) and '__pycache__' "
        "not in p and not p.endswith(('.pth', '.so')) and 'dist-info' not in p))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert [line for line in result.stdout.splitlines() if line.strip()] == []


# --- the issue-11 gaps and the secret corpus ----------------------------------------------------

STRIPE_LIVE = (
    "sk_live_51" + "H8xYzAbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefGHIJKLMNOPQRSTUVWXYZ" * 2
)
DISCORD_WEBHOOK_PATH = "123456789012345678/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-AbCdEfGhIjKl"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "cache at redis://:Zq9xP2mVt7Lk@cache.internal:6379/0",
            "cache at redis://:[redacted:basic_auth]@cache.internal:6379/0",
            id="url-empty-user",
        ),
        pytest.param(
            f"stripe {STRIPE_LIVE} end", "stripe [redacted:stripe_key] end", id="stripe-live-long"
        ),
        pytest.param(
            f"stripe {STRIPE_LIVE.replace('live', 'test')}.",
            "stripe [redacted:stripe_key].",
            id="stripe-test",
        ),
        pytest.param(
            "key ghp_a1B2c3D4e5F6g7H8i9J0\nk1L2m3N4o5P6q7R8 then",
            "key [redacted:github_token] then",
            id="split-over-two-lines",
        ),
        pytest.param(
            f"- old key: {STRIPE_LIVE[:50]}\n  {STRIPE_LIVE[50:]}\n- next item",
            "- old key: [redacted:stripe_key]\n- next item",
            id="wrapped-indented",
        ),
        pytest.param("DB_PASS=Tr0ub4dor&3", "DB_PASS=[redacted:password]", id="db-pass"),
        pytest.param("pwd=Tr0ub4dor3", "pwd=[redacted:password]", id="pwd"),
        pytest.param("SMTP_PASS=Tr0ub4dor3", "SMTP_PASS=[redacted:password]", id="smtp-pass"),
        pytest.param(
            "| password | hunter2x |", "| password | [redacted:password] |", id="table-row"
        ),
        pytest.param(
            "| user | password |\n|---|---|\n| admin | Xy7kQ9pL |",
            "| user | password |\n|---|---|\n| admin | [redacted:password] |",
            id="table-column",
        ),
        pytest.param(
            "**password**: hunter2x", "**password**: [redacted:password]", id="bold-label"
        ),
        pytest.param(
            "- **API key:** `a8f5f167f44f4964e6c998dee827110c`",
            "- **API key:** `[redacted:generic_api_key]`",
            id="bold-colon-inside-backticks",
        ),
        pytest.param("密钥：Zq9xP2mVt7LkAb", "密钥：[redacted:password]", id="miyao"),
        pytest.param("访问令牌: Zq9xP2mVt7LkAb", "访问令牌: [redacted:password]", id="lingpai"),
        pytest.param(
            f"hook https://discord.com/api/webhooks/{DISCORD_WEBHOOK_PATH} ok",
            "hook https://discord.com/api/webhooks/[redacted:discord_webhook] ok",
            id="discord-webhook",
        ),
        pytest.param(
            "curl -u admin:Zq9xP2mVt7 https://ci.example.com",
            "curl -u admin:[redacted:basic_auth] https://ci.example.com",
            id="curl-user",
        ),
    ],
)
def test_issue_11_gaps_are_closed(text: str, expected: str) -> None:
    assert redact(text) == expected
    assert redact(expected) == expected


@pytest.mark.parametrize("case", CORPUS, ids=[case.id for case in CORPUS])
def test_nothing_of_a_corpus_secret_survives_redaction(case: Case) -> None:
    redacted = redact(case.text)
    for secret in case.secrets:
        assert leaks(secret, redacted) is None, redacted


def test_the_corpus_is_large_and_varied() -> None:
    assert len(CORPUS) >= 60
    assert len({case.id for case in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_notes_survive_unchanged(text: str) -> None:
    assert redact(text) == text


def test_a_word_after_a_key_at_a_line_end_is_not_taken_for_its_rest() -> None:
    token = "ghp_" + "a1B2c3D4e5" * 4
    assert redact(f"token {token}\nThereafter we reboot.") == (
        "token [redacted:github_token]\nThereafter we reboot."
    )


def test_what_detect_secrets_finds_in_the_corpus_we_redact_too() -> None:
    """detect-secrets' named plugins (its entropy plugins flag every word of prose) over every
    corpus line: each value they report is gone from our redaction of that line."""
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import default_settings

    missed: list[tuple[str, str]] = []
    with default_settings():
        for case in CORPUS:
            for line in case.text.splitlines():
                redacted = redact(line)
                for finding in scan_line(line):
                    if "High Entropy" in finding.type or not finding.secret_value:
                        continue
                    if leaks(finding.secret_value, redacted):
                        missed.append((case.id, finding.type))
    assert missed == []


# --- properties ---------------------------------------------------------------------------------

# Pieces that make rules fire, wrap, merge and stop next to marks that belong to a character.
PIECES = st.sampled_from(
    [
        *(case.text for case in CORPUS[::7]),
        "password: ",
        "| password | ",
        " |\n|---|---|\n",
        "**token**: ",
        "密钥：",
        "ghp_a1B2c3D4e5F6g7H8i9J0",
        "k1L2m3N4o5P6q7R8",
        "sk_live_51AbCdEfGh",
        "\n  ",
        "\u0301",
        "\u200d",
        "\ufe0f",
        "\U0001f469",
        "\U0001f3fd",
        "e\u0301",
        "[redacted:password]",
    ]
)
TEXTS = st.lists(st.one_of(PIECES, st.text(max_size=12)), max_size=14).map("".join)
LONGEST_MARKER = len(MARKER_PREFIX) + 40


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_redaction_grows_a_text_by_at_most_one_marker_per_secret(text: str) -> None:
    redacted = redact(text)
    markers = redacted.count(MARKER_PREFIX) - text.count(MARKER_PREFIX)
    assert len(redacted) <= len(text) + max(0, markers) * LONGEST_MARKER
    assert redact(redacted) == redacted


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_a_secret_span_never_splits_a_character(text: str) -> None:
    for secret in find_secrets(text):
        assert 0 <= secret.start < secret.end <= len(text)
        assert not _attaches(text[secret.start]) or secret.start == 0
        if secret.end < len(text):
            assert not _attaches(text[secret.end]), (text, secret)
            assert text[secret.end - 1] != "\u200d"
    redact(text).encode("utf-8")  # whole code points only
