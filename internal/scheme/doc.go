// Package scheme is the one runtime.Scheme of Strait's clients: Kubernetes' own types,
// Strait's (api/v1alpha1) and the Multi-Cluster Services API's. The hub, the people's
// commands and the tests build their clients with it, so that each reads and writes the
// same types; it owns nothing else and imports no other package of Strait but the API.
package scheme
