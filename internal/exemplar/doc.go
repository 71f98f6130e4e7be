// Package exemplar attaches an exemplar to a histogram observation: the one event it
// was (an export's name, a ClusterSet's generation, the gateway a failover came from),
// so that a slow percentile on a dashboard leads to the event behind it. Prometheus
// keeps exemplars when it runs with --enable-feature=exemplar-storage and scrapes the
// OpenMetrics format, which Strait's metrics endpoints offer.
package exemplar
