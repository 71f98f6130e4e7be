package join

import (
	"bytes"
	"flag"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"filippo.io/age/armor"
)

var update = flag.Bool("update", false, "rewrite testdata/c3-kubeconfig.enc.yaml")

// The test's age identity: it protects nothing but the golden file, which
// test/fluxbin/sopsdecrypt decrypts with SOPS's own library as Flux's kustomize-controller
// does.
const (
	goldenFile  = "testdata/c3-kubeconfig.enc.yaml"
	identityKey = "testdata/age-test-identity.txt"
	kubeconfigV = "apiVersion: v1\nkind: Config\nclusters:\n- name: c3\n  cluster: {server: \"https://10.250.3.2:6443\"}\n"
)

// counter is a reproducible stand-in for crypto/rand: the data key and the nonces.
type counter struct{ n byte }

func (c *counter) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = c.n
		c.n++
	}
	return len(p), nil
}

var ageBlock = regexp.MustCompile(`(?s)-----BEGIN AGE ENCRYPTED FILE-----.*?-----END AGE ENCRYPTED FILE-----`)

// strait join --sops writes the golden file's format byte for byte but for the age
// stanza (age's own randomness), and that stanza opens with the identity to the data key.
func TestSOPSSecretIsTheGoldenFile(t *testing.T) {
	key, err := os.ReadFile(identityKey)
	if err != nil {
		t.Fatal(err)
	}
	id, err := age.ParseX25519Identity(strings.TrimSpace(string(key)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 26, 15, 0, 0, 0, time.UTC)
	got, err := SOPSSecret("strait-system", "c3-kubeconfig", "value", kubeconfigV, id.Recipient().String(), now, &counter{})
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(goldenFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	mask := func(b []byte) string { return ageBlock.ReplaceAllString(string(b), "AGE") }
	if mask(got) != mask(want) {
		t.Errorf("got:\n%s\nwant (%s, go test -update rewrites it):\n%s", got, goldenFile, want)
	}
	// The block as YAML holds it: each line indented.
	var block strings.Builder
	for _, l := range strings.Split(string(ageBlock.Find(got)), "\n") {
		block.WriteString(strings.TrimSpace(l) + "\n")
	}
	r, err := age.Decrypt(armor.NewReader(strings.NewReader(block.String())), id)
	if err != nil {
		t.Fatal(err)
	}
	dataKey, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(dataKey, (&counter{}).bytes(32)) {
		t.Errorf("the age stanza holds %x, %v; want the data key %x", dataKey, err, (&counter{}).bytes(32))
	}
	if _, err := SOPSSecret("strait-system", "c3-kubeconfig", "value", kubeconfigV, "age1nope", now, nil); err == nil || !strings.Contains(err.Error(), `--sops "age1nope": not an age recipient`) {
		t.Errorf("a bad recipient: %v", err)
	}
}

func (c *counter) bytes(n int) []byte {
	b := make([]byte, n)
	_, _ = c.Read(b)
	return b
}
