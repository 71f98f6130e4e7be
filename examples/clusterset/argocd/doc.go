// Package argocd holds the tests of the example repo's Argo CD wiring: the ClusterSet
// health check of argocd-cm.yaml run by gopher-lua, the interpreter Argo CD embeds, the
// way Argo CD runs it, against ClusterSets whose status the hub controller really wrote
// (testdata, made by `go test -run TestGenerateStatuses -update`); and application.yaml
// checked against Argo CD's own Application CRD on a real API server.
//
// Its one piece of code is Health, the check run as Argo CD runs it, which the lab's
// e2e tests also run against the live ClusterSet; the tests touch nothing outside this
// directory (the generator writes testdata/ only).
package argocd
