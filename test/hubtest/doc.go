// Package hubtest runs the hub's own parts in the test process against a test/clusters
// environment: the ClusterSet webhook (ServeWebhook, registered on the hub's API server
// the way kustomize/hub registers it, but by URL) and the ClusterSet controller
// (RunController, as `straitd hub` runs it). Tests outside the webhook and controllers
// packages use it to meet the hub a user meets: a refusal from the real webhook, a
// status written by the real reconciler.
//
// It owns the webhook configuration it creates, the certificate directory, and the
// managers it starts; each is removed or stopped by the stop function it returns. It
// starts no control plane (test/clusters does).
package hubtest
