"""Pure analysis over measured data (numpy/pandas only): plateaus and knees, sweep plans, byte accounting."""
