package main

// floors are make bench-gate's; they follow from its calibration runs.
func floors() []floor { return nil }
