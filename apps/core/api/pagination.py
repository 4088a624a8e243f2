from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions, pagination

from apps.core.codes import CoreCode
from apps.core.errors import ValidationFailed


def _invalid_cursor() -> ValidationFailed:
    return ValidationFailed(
        "The cursor is not one this list gave out.", code=CoreCode.INVALID_CURSOR, field="cursor"
    )


class CursorPagination(pagination.CursorPagination):
    """Stable pages over lists that change while they are read; the view's `ordering` wins."""

    ordering = "-pk"
    page_size_query_param = "page_size"
    max_page_size = 500

    def decode_cursor(self, request):
        # DRF answers a cursor it cannot read with 404, as if the list did not exist;
        # the list is there and the input is wrong.
        try:
            cursor = super().decode_cursor(request)
        except exceptions.NotFound:
            raise _invalid_cursor() from None
        if cursor is not None and cursor.position is not None and "\x00" in cursor.position:
            raise _invalid_cursor()
        return cursor

    def paginate_queryset(self, queryset, request, view=None):
        # A cursor is base64 anyone can write: its position is compared with the ordering
        # field, and a position that field cannot hold ("p=x" on an id) is refused while
        # the filter is built, before any SQL.
        try:
            return super().paginate_queryset(queryset, request, view)
        except (ValueError, TypeError, OverflowError, DjangoValidationError):
            if request.query_params.get(self.cursor_query_param):
                raise _invalid_cursor() from None
            raise
