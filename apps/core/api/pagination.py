from rest_framework import pagination


class CursorPagination(pagination.CursorPagination):
    """Stable pages over lists that change while they are read; the view's `ordering` wins."""

    ordering = "-pk"
    page_size_query_param = "page_size"
    max_page_size = 500
