"""The race of `fsbench tune`, in one room: the racing rule (rule.py: who is dropped, when
the race stops), its sequential bounds (bounds.py) and checks (checks.py), the race
rebuilt from stored trials (trials.py: what --resume and the reports replay), the driver
that runs its rounds through an executor (driver.py), and what "safe" means for
`--require safe` (safety.py). The command (cli/tune.py) runs it; reports/tune.py tells it."""
