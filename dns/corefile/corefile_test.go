package corefile

import (
	"errors"
	"strings"
	"testing"
)

// kubeadm is the Corefile kubeadm installs.
const kubeadm = `.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success cluster.local
       disable denial cluster.local
    }
    loop
    reload
    loadbalance
}
`

// withOthers has other stanzas, a comment mentioning our zone, and no final newline.
const withOthers = `# site overrides
corp.example:53 {
    forward . 192.0.2.53 # "clusterset.local" is not this block's zone
}
` + kubeadm + `consul.local:53 {
    forward . 198.51.100.1
}`

var zones = []string{"clusterset.local.", "example.org"}

func TestBlock(t *testing.T) {
	want := BeginMarker + `
clusterset.local:53 example.org:53 {
    errors
    forward . 10.96.0.53:53
}
# strait-dns: end
`
	if got := Block(zones, "10.96.0.53:53"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestEnsureAndRemove(t *testing.T) {
	block := Block(zones, "10.96.0.53:53")
	for name, original := range map[string]string{"kubeadm": kubeadm, "other stanzas": withOthers, "empty": ""} {
		t.Run(name, func(t *testing.T) {
			got, err := Ensure(original, block, zones)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got, block) || strings.Replace(got, block, "", 1) != original {
				t.Fatalf("Ensure changed bytes outside our block:\n%s", got)
			}
			again, err := Ensure(got, block, zones)
			if err != nil || again != got {
				t.Fatalf("Ensure is not idempotent (err %v):\n%s", err, again)
			}
			moved := Block([]string{"clusterset.local"}, "10.96.0.99:53")
			replaced, err := Ensure(got, moved, []string{"clusterset.local"})
			if err != nil || replaced != moved+original {
				t.Fatalf("a new block does not replace ours in place (err %v):\n%s", err, replaced)
			}
			removed, err := Remove(replaced)
			if err != nil || removed != original {
				t.Fatalf("Remove does not give the original back (err %v):\n%q\nwant\n%q", err, removed, original)
			}
			if same, err := Remove(original); err != nil || same != original {
				t.Fatalf("Remove without our block changed it (err %v)", err)
			}
		})
	}
}

func TestOurBlockWhereAPersonMovedIt(t *testing.T) {
	block := Block(zones, "10.96.0.53:53")
	corefile := kubeadm + "\n" + strings.Replace(block, "10.96.0.53", "10.96.0.1", 1) + "# trailing comment\n"
	got, err := Ensure(corefile, block, zones)
	if err != nil {
		t.Fatal(err)
	}
	if want := kubeadm + "\n" + block + "# trailing comment\n"; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestRefusesWhatCoreDNSWouldReject(t *testing.T) {
	block := Block(zones, "10.96.0.53:53")
	lighthouse := kubeadm + "clusterset.local:53 {\n    forward . 10.96.0.77\n}\n"
	if _, err := Ensure(lighthouse, block, zones); err == nil || !strings.Contains(err.Error(), "clusterset.local:53") {
		t.Errorf("another clusterset.local block: err %v, want a conflict naming it", err)
	}
	if _, err := Ensure("dns://EXAMPLE.org.:53 {\n}\n", block, zones); err == nil {
		t.Error("a block for example.org written differently: want a conflict")
	}
	if _, err := Ensure("clusterset.local:5353 {\n}\n", block, zones); err != nil {
		t.Errorf("the zone on another port is no conflict: %v", err)
	}
	for _, broken := range []string{BeginMarker + "\n" + kubeadm, kubeadm + EndMarker + "\n", EndMarker + "\n" + BeginMarker + "\n"} {
		if _, err := Ensure(broken, block, zones); !errors.Is(err, ErrMalformed) {
			t.Errorf("unpaired markers: err %v, want ErrMalformed", err)
		}
		if _, err := Remove(broken); !errors.Is(err, ErrMalformed) {
			t.Errorf("Remove with unpaired markers: err %v, want ErrMalformed", err)
		}
	}
}
