import getpass
import os

from django.core.management.base import BaseCommand, CommandError

from apps.core.context import SYSTEM_ACTOR
from apps.core.errors import DomainError
from apps.tenancy import services


class Command(BaseCommand):
    help = "Create an operator (staff) account, audited like every other change."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--email", default="")
        parser.add_argument(
            "--password-env",
            metavar="VAR",
            help="read the password from this environment variable instead of prompting",
        )
        parser.add_argument(
            "--admin", action="store_true", help="also allow the Django admin (superuser)"
        )

    def handle(self, *args, username, email, password_env, admin, **options):
        if password_env:
            password = os.environ.get(password_env, "")
            if not password:
                raise CommandError(f"the environment variable {password_env} is empty or unset")
        else:
            password = getpass.getpass("Password: ")
            if password != getpass.getpass("Password (again): "):
                raise CommandError("the passwords differ")
        try:
            user = services.user_create(
                actor=SYSTEM_ACTOR,
                username=username,
                password=password,
                email=email,
                is_operator=True,
                is_superuser=admin,
            )
        except DomainError as exc:
            raise CommandError(exc.detail) from None
        self.stdout.write(f"operator {user.username} created")
