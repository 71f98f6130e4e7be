package members

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// servesWatched says whether the member serves every watched kind, nil when it does or
// when the connection maps kinds through the member's discovery (no Options.Mapper),
// whose mappers would have refused the connection. With a fixed mapper the informers
// of a kind the member lacks (Strait or the MCS API not installed there) only fail
// their lists, and the connection would wait, as "still being listed", for ever; it
// is asked of the member's discovery until every kind was found once.
func (m *Member) servesWatched(ctx context.Context) error {
	if m.opts.Mapper == nil || m.served.Load() {
		return nil
	}
	byVersion := map[schema.GroupVersion][]string{}
	for _, gvk := range m.watched {
		byVersion[gvk.GroupVersion()] = append(byVersion[gvk.GroupVersion()], gvk.Kind)
	}
	for gv, kinds := range byVersion {
		served, err := m.servedKinds(ctx, gv)
		if err != nil {
			return err
		}
		for _, kind := range kinds {
			if !served[kind] {
				return &meta.NoKindMatchError{GroupKind: gv.WithKind(kind).GroupKind(), SearchedVersions: []string{gv.Version}}
			}
		}
	}
	m.served.Store(true)
	return nil
}

// servedKinds are the kinds the member serves in gv, none when it does not serve gv.
func (m *Member) servedKinds(ctx context.Context, gv schema.GroupVersion) (map[string]bool, error) {
	path := "/apis/" + gv.String()
	if gv.Group == "" {
		path = "/api/" + gv.Version
	}
	var list metav1.APIResourceList
	res := m.disco.RESTClient().Get().AbsPath(path).Do(ctx)
	var code int
	if res.StatusCode(&code); code == 404 {
		return nil, nil
	}
	if err := res.Into(&list); err != nil {
		return nil, fmt.Errorf("discovering %s: %w", gv, err)
	}
	served := map[string]bool{}
	for _, r := range list.APIResources {
		if !strings.Contains(r.Name, "/") { // not a subresource
			served[r.Kind] = true
		}
	}
	return served, nil
}
