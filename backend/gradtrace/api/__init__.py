"""The HTTP service: JSON API, pages and operations endpoints. Never imports torch."""
