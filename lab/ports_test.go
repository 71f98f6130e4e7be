package lab

import (
	"strings"
	"testing"
)

// A lab's host ports stay out of the kernel's ephemeral range, where an outgoing
// connection can take one before the lab daemon binds it.
func TestHostPortsStayOutOfTheEphemeralRange(t *testing.T) {
	const lo, hi = 32768, 60999
	for _, ok := range []int{16443, 26443, 31443, 32762} {
		if err := checkHostPorts(ok, 4, lo, hi); err != nil {
			t.Errorf("base %d: %v", ok, err)
		}
	}
	err := checkHostPorts(33443, 3, lo, hi)
	if err == nil || !strings.Contains(err.Error(), "33441-33446") || !strings.Contains(err.Error(), "below 32765") {
		t.Errorf("base 33443: %v; want the ports and a base below 32765", err)
	}
	if err := checkHostPorts(32765, 4, lo, hi); err == nil {
		t.Error("base 32765 with 4 control planes reaches 32769; want it refused")
	}
}
