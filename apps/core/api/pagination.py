from rest_framework import exceptions, pagination

from apps.core.errors import ValidationFailed


class CursorPagination(pagination.CursorPagination):
    """Stable pages over lists that change while they are read; the view's `ordering` wins."""

    ordering = "-pk"
    page_size_query_param = "page_size"
    max_page_size = 500

    def decode_cursor(self, request):
        # DRF answers a cursor it cannot read with 404, as if the list did not exist;
        # the list is there and the input is wrong.
        try:
            return super().decode_cursor(request)
        except exceptions.NotFound:
            raise ValidationFailed(
                "The cursor is not one this list gave out.", code="invalid_cursor", field="cursor"
            ) from None
