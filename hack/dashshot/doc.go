// Command dashshot draws a Grafana dashboard of the monitoring component as one SVG
// picture from a Prometheus's data: each panel's queries over the last --range, as
// lines (time series) or the last value (stats), laid out on the dashboard's grid. It
// makes the picture in docs/observability.md from the e2e lab's hub Prometheus, with no
// Grafana:
//
//	go run ./hack/dashshot -prometheus http://127.0.0.1:16441 \
//	    kustomize/components/monitoring/dashboards/strait-clusterset.json > docs/images/dashboard.svg
package main
