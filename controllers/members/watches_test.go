package members

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// A watch is asked for uncompressed, so that its stream holds no gzip reader; a list or
// a get is still asked for gzip, which the transport decodes.
func TestWatchesAreAskedForUncompressedAndTheRestCompressed(t *testing.T) {
	var mu sync.Mutex
	asked := map[string]string{} // query -> Accept-Encoding
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		asked[r.URL.RawQuery] = r.Header.Get("Accept-Encoding")
	}))
	defer srv.Close()
	c := &http.Client{Transport: uncompressedWatches{srv.Client().Transport}}
	want := map[string]string{
		"watch=true&sendInitialEvents=true": "identity",
		"watch=1":                           "identity",
		"watch=false":                       "gzip",
		"limit=500":                         "gzip",
		"":                                  "gzip",
	}
	for q := range want {
		resp, err := c.Get(srv.URL + "/apis/strait.io/v1alpha1/namespaces/strait-system/gateways?" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	for q, enc := range want {
		if asked[q] != enc {
			t.Errorf("?%s: asked for %q, want %q", q, asked[q], enc)
		}
	}
}
