"""Accounts: roles as groups, the permission table, API tokens, login."""
