from django.core.management.base import BaseCommand, CommandError

from apps.core.context import SYSTEM_ACTOR
from apps.core.errors import DomainError
from apps.tenancy import selectors, services


class Command(BaseCommand):
    help = (
        "Remove a person's TOTP authenticator and recovery codes (a lost device), audited. "
        "An operator sets up a new one at their next sign-in."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, *args, username, **options):
        user = selectors.user_by_username(username)
        if user is None:
            raise CommandError(f"there is no user {username!r}")
        try:
            services.totp_reset(actor=SYSTEM_ACTOR, user=user)
        except DomainError as exc:
            raise CommandError(exc.detail) from None
        self.stdout.write(f"two-factor sign-in of {username} reset")
