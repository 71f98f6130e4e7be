package nldump

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
)

// attempts bounds the retries: a table that changes under every one of them is not
// settling, and the caller's own retry takes over.
const attempts = 5

// Retry runs dump until the kernel lets it finish without a change under it, at most a
// few times; any other error is returned at once.
func Retry[T any](dump func() (T, error)) (T, error) {
	var (
		v   T
		err error
	)
	for range attempts {
		if v, err = dump(); !errors.Is(err, netlink.ErrDumpInterrupted) {
			return v, err
		}
	}
	return v, fmt.Errorf("%w (%d attempts)", err, attempts)
}
