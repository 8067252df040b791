"""Ansible callback plugins shipped with fsbench (loaded by path, not imported)."""
