package members

import "net/http"

// uncompressedWatches asks the API server for its watch streams uncompressed, and for
// everything else as before (gzip, which the transport decodes). A gzip-compressed
// stream holds its gzip reader, some 40 KB (DEFLATE's 32 KB window), for as long as it
// is open, and a connection keeps one watch open per watched kind: 250 KB a member. A
// list or a get holds its reader only while it is read, so the direct client's paged
// lists stay compressed. The informers' first list comes over their watch (client-go's
// streaming lists), uncompressed too.
type uncompressedWatches struct{ next http.RoundTripper }

func (u uncompressedWatches) RoundTrip(r *http.Request) (*http.Response, error) {
	if w := r.URL.Query().Get("watch"); (w == "true" || w == "1") && r.Header.Get("Accept-Encoding") == "" {
		r = r.Clone(r.Context())
		// An explicit encoding also keeps the transport from asking for gzip itself.
		r.Header.Set("Accept-Encoding", "identity")
	}
	return u.next.RoundTrip(r)
}
