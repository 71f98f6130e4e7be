package lab

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// keepInheritedFromChildren marks close-on-exec every descriptor above stderr this
// process holds. Go opens its own that way; what is left is what the process inherited,
// above all a lock: `flock /run/strait-lab.lock make lab` hands the lock's descriptor down
// to strait lab up, whose daemon, control planes and nodes outlive it, so the lock stayed
// held until lab down, and `flock /run/strait-lab.lock strait lab down` waited forever.
// Descriptors passed on on purpose (exec.Cmd.ExtraFiles) are dup'ed into the child
// without the flag, so they still reach it.
func keepInheritedFromChildren() error {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("marking inherited descriptors close-on-exec: %w", err)
	}
	return nil
}
