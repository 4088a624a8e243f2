"""The console shell: sign-in and two-factor, the tenant switcher, list pages, the
dashboard, and tenancy's pages. Above core and tenancy and beneath the domain apps,
whose own console views use it; it imports no domain app (their dashboard figures
come through apps.console.panels)."""
