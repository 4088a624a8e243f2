"""SMTP settings reach Django's mail backend: a notice goes through a relay on the
loopback interface that demands a login, over STARTTLS or TLS from the first byte,
with a certificate the sending process is made to trust (as an operator's relay's)."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import os
import socket
import socketserver
import ssl
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.core.deployment import ROOT

USER, PASSWORD = "steward-relay", "relay-secret"
SEND = (
    "from django.core.mail import send_mail; "
    "send_mail('Overdue task', 'A task is overdue.', None, ['owner@example.com'])"
)


def _certificate(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "relay.crt", directory / "relay.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@dataclass
class Relay:
    """A small SMTP relay: EHLO, STARTTLS, AUTH PLAIN, MAIL, RCPT, DATA, QUIT. It refuses
    a login before TLS and mail before a login, as a relay on the internet would."""

    context: ssl.SSLContext
    implicit_tls: bool
    messages: list[dict] = field(default_factory=list)

    def __post_init__(self):
        relay = self

        class Session(socketserver.StreamRequestHandler):
            def setup(self):
                self.tls = False
                if relay.implicit_tls:
                    self.request = relay.context.wrap_socket(self.request, server_side=True)
                    self.tls = True
                super().setup()

            def say(self, line: str):
                self.wfile.write(line.encode() + b"\r\n")
                self.wfile.flush()

            def handle(self):
                self.say("220 relay ESMTP")
                user, sender, recipients = None, None, []
                while line := self.rfile.readline().decode().rstrip("\r\n"):
                    verb, _, rest = line.partition(" ")
                    verb = verb.upper()
                    if verb in ("EHLO", "HELO"):
                        offers = ["AUTH PLAIN"] if self.tls else ["STARTTLS"]
                        for offer in ["relay", *offers[:-1]]:
                            self.say(f"250-{offer}")
                        self.say(f"250 {offers[-1]}")
                    elif verb == "STARTTLS" and not self.tls:
                        self.say("220 go ahead")
                        self.request = relay.context.wrap_socket(self.request, server_side=True)
                        self.rfile = self.request.makefile("rb")
                        self.wfile = self.request.makefile("wb")
                        self.tls = True
                    elif verb == "AUTH" and self.tls and rest.upper().startswith("PLAIN "):
                        _, name, secret = base64.b64decode(rest[6:]).decode().split("\0")
                        if (name, secret) == (USER, PASSWORD):
                            user = name
                            self.say("235 authenticated")
                        else:
                            self.say("535 bad credentials")
                    elif verb == "MAIL" and user:
                        sender = rest.split(":", 1)[1].strip("<>")
                        self.say("250 ok")
                    elif verb == "RCPT" and sender:
                        recipients.append(rest.split(":", 1)[1].strip("<>"))
                        self.say("250 ok")
                    elif verb == "DATA" and recipients:
                        self.say("354 end with .")
                        body = b""
                        while (chunk := self.rfile.readline()) != b".\r\n":
                            body += chunk
                        relay.messages.append(
                            {"user": user, "from": sender, "to": recipients, "body": body}
                        )
                        self.say("250 queued")
                    elif verb == "QUIT":
                        self.say("221 bye")
                        return
                    else:
                        self.say("530 refused")

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Session)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def certificate(tmp_path):
    return _certificate(tmp_path)


def _send(env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(  # noqa: S603
        [sys.executable, "-c", f"import django; django.setup(); {SEND}"],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "portal.settings", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def _smtp_env(port: int, certificate: Path, **env: str) -> dict:
    return {
        "STEWARD_EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "STEWARD_EMAIL_HOST": "localhost",
        "STEWARD_EMAIL_PORT": str(port),
        "STEWARD_EMAIL_FROM": "steward@example.com",
        "STEWARD_EMAIL_USER": USER,
        "STEWARD_EMAIL_PASSWORD": PASSWORD,
        # The relay's certificate is trusted the way a private CA's would be.
        "SSL_CERT_FILE": str(certificate),
        **env,
    }


@pytest.mark.parametrize(
    ("implicit_tls", "switch"),
    [(False, "STEWARD_EMAIL_USE_TLS"), (True, "STEWARD_EMAIL_USE_SSL")],
    ids=["starttls", "implicit-tls"],
)
def test_a_notice_goes_through_a_relay_that_wants_tls_and_a_login(
    certificate, implicit_tls, switch
):
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)
    relay = Relay(context, implicit_tls=implicit_tls)
    try:
        sent = _send(_smtp_env(relay.port, certificate[0], **{switch: "true"}))
    finally:
        relay.close()
    assert sent.returncode == 0, sent.stderr[-2000:]
    [message] = relay.messages
    assert message["user"] == USER
    assert (message["from"], message["to"]) == ("steward@example.com", ["owner@example.com"])
    assert b"Subject: Overdue task" in message["body"]


def test_a_wrong_password_is_refused_by_the_relay_not_ignored(certificate):
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)
    relay = Relay(context, implicit_tls=False)
    try:
        env = _smtp_env(relay.port, certificate[0], STEWARD_EMAIL_USE_TLS="true")
        sent = _send({**env, "STEWARD_EMAIL_PASSWORD": "wrong"})
    finally:
        relay.close()
    assert sent.returncode != 0 and "SMTPAuthenticationError" in sent.stderr
    assert relay.messages == []


def test_a_silent_relay_fails_the_notice_within_the_timeout(certificate):
    with socket.socket() as silent:  # accepts connections and never greets
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        env = _smtp_env(silent.getsockname()[1], certificate[0])
        sent = _send({**env, "STEWARD_EMAIL_TIMEOUT_SECONDS": "1"})
    assert sent.returncode != 0 and "timed out" in sent.stderr


def test_starttls_and_implicit_tls_together_stop_the_start():
    sent = _send({"STEWARD_EMAIL_USE_TLS": "true", "STEWARD_EMAIL_USE_SSL": "true"})
    assert sent.returncode != 0
    assert "Set STEWARD_EMAIL_USE_TLS or STEWARD_EMAIL_USE_SSL, not both." in sent.stderr
