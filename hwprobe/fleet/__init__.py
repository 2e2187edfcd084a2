"""Field validation and fleet comparison over stored runs.

records: load runs (results dirs, profile.json files, globs) as flat ceiling records, fast enough for
thousands of files; expect: the expectation a datasheet entry sets (fractions of theory, per power mode);
causes: why two runs differ, from what each recorded; validate: one run against a reference, pass/fail per
ceiling; compare: a fleet table with robust outliers; plot: the fleet as a strip plot per ceiling.
"""
