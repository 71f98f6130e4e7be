// Command dashshot draws a Grafana dashboard of the monitoring component as one SVG
// picture from a Prometheus's data: each panel's queries over the last --range, as
// lines (time series) or the last value (stats), laid out on the dashboard's grid. It
// makes the picture in docs/observability.md from the e2e lab's hub Prometheus, with no
// Grafana, and records what the queries answered beside it, so that the picture can be
// drawn again from the recording and checked against the dashboard
// (TestThePictureIsTheDashboard; make dashboard-picture):
//
//	go run ./hack/dashshot -prometheus http://127.0.0.1:16441 -record docs/images/dashboard.json \
//	    kustomize/components/monitoring/dashboards/strait-clusterset.json > docs/images/dashboard.svg
//	go run ./hack/dashshot -replay docs/images/dashboard.json \
//	    kustomize/components/monitoring/dashboards/strait-clusterset.json > docs/images/dashboard.svg
package main
