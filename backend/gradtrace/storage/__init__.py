"""Durable storage of runs and shares (SQLAlchemy 2; SQLite by default, PostgreSQL by URL)."""
