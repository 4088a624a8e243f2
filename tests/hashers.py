"""The password hasher the test run stores passwords with: Django's PBKDF2, with fewer
iterations.

At Django's million iterations a password costs 0.3–0.7 s to store or check, and the
suite makes a person (an operator, a tenant admin, a member) for most of its tests and
signs many of them in. The hash keeps Django's own algorithm name and writes its
iteration count into the hash, so Django's default hasher checks it as it stands: the
servers and workers the tests start as separate processes, with Steward's real
settings, sign in the same people.
"""

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class FewerIterationsPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    iterations = 1_000
