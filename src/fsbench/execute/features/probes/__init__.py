"""One module per probe: each exports PROBE (see features/base.py)."""
