"""Steward as an owner of its own tables: it answers the owner tasks addressed to it
(deleting, redacting, releasing and exporting what its tables hold of a tenant) like
any owning service, with a receipt."""
