// Package corpus reads the invalid ClusterSets kept in plan/testdata/invalid, each with
// the field paths its refusal must name and who must refuse it (the CRD's schema or the
// webhook), and checks a refusal against them. The render
// test, the webhook test on a real API server and the fuzz seeds all read the corpus
// through it, so they agree on what a case is. It owns no validation rule and must not
// import plan: the corpus is judged from outside.
package corpus
