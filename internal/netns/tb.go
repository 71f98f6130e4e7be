package netns

// TB is the part of testing.TB the per-test helpers use: *testing.T and *testing.B
// satisfy it, and the lab, which never passes one, does not link package testing.
type TB interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Fatal(args ...any)
}
