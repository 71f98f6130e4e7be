package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestAskPeerHoldsOnlyOnASilentAnswer: the active gateway may hold only when a peer
// says the API server does not answer it; a peer that reaches it, cannot be asked, or
// answers something else is a no.
func TestAskPeerHoldsOnlyOnASilentAnswer(t *testing.T) {
	serve := func(status int, p *apiServerProbe) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(status)
			if p != nil {
				_ = json.NewEncoder(w).Encode(p)
			}
		}))
		t.Cleanup(srv.Close)
		return srv.URL + APIServerProbePath
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL + APIServerProbePath
	closed.Close()
	for _, tc := range []struct {
		name string
		url  string
		want bool
	}{
		{"silent", serve(http.StatusOK, &apiServerProbe{Node: "gw2", Answers: false, Error: "connection refused"}), true},
		{"answers", serve(http.StatusOK, &apiServerProbe{Node: "gw2", Answers: true}), false},
		{"an error page", serve(http.StatusInternalServerError, nil), false},
		{"no JSON", serve(http.StatusOK, nil), false},
		{"not listening", closedURL, false},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if got := askPeer(ctx, tc.url); got != tc.want {
			t.Errorf("%s: askPeer = %v, want %v", tc.name, got, tc.want)
		}
		cancel()
	}
	if got := peerPort(":9342"); got != 9342 {
		t.Errorf("peerPort(:9342) = %d", got)
	}
	if got := peerPort("0"); got != 0 {
		t.Errorf("peerPort(0) = %d, want 0 (metrics off: never hold)", got)
	}
}
