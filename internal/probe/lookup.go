package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// Records is what one query of LookupRecords was answered: the response code
// ("NOERROR", "NXDOMAIN", ...) and the addresses of the type asked for. A NOERROR with
// no address is a name that exists without records of that type: what an IPv4-only
// service's AAAA must be (NXDOMAIN would tell a resolver the name has no A either).
type Records struct {
	Type      string   `json:"type"`
	Rcode     string   `json:"rcode,omitempty"`
	Addresses []string `json:"addresses,omitempty"`
	// Error says why no answer came (every server timed out, say).
	Error string `json:"error,omitempty"`
}

// ResolvConf is the pod's resolver configuration: the cluster's DNS.
const ResolvConf = "/etc/resolv.conf"

// LookupRecords asks the servers of resolvConf for each record type (A, AAAA) of the
// fully qualified name, one query a type, and returns the answers in the order asked.
func LookupRecords(ctx context.Context, resolvConf, name string, types []string, timeout time.Duration) ([]Records, error) {
	cfg, err := dns.ClientConfigFromFile(resolvConf)
	if err != nil {
		return nil, err
	}
	var servers []string
	for _, s := range cfg.Servers {
		servers = append(servers, net.JoinHostPort(s, cfg.Port))
	}
	return queryRecords(ctx, servers, name, types, timeout)
}

// queryRecords asks servers, in order until one answers, for each type of name.
func queryRecords(ctx context.Context, servers []string, name string, types []string, timeout time.Duration) ([]Records, error) {
	if len(servers) == 0 {
		return nil, errors.New("no DNS server configured")
	}
	out := make([]Records, 0, len(types))
	for _, t := range types {
		qtype, ok := dns.StringToType[strings.ToUpper(t)]
		if !ok || (qtype != dns.TypeA && qtype != dns.TypeAAAA) {
			return nil, fmt.Errorf("record type %q: want A or AAAA", t)
		}
		out = append(out, queryType(ctx, servers, dns.Fqdn(name), qtype, timeout))
	}
	return out, nil
}

func queryType(ctx context.Context, servers []string, fqdn string, qtype uint16, timeout time.Duration) Records {
	r := Records{Type: dns.TypeToString[qtype]}
	msg := new(dns.Msg)
	msg.SetQuestion(fqdn, qtype)
	var errs []error
	for _, s := range servers {
		c := &dns.Client{Timeout: timeout}
		resp, _, err := c.ExchangeContext(ctx, msg, s)
		if err == nil && resp.Truncated {
			c.Net = "tcp"
			resp, _, err = c.ExchangeContext(ctx, msg, s)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s, err))
			continue
		}
		r.Rcode = dns.RcodeToString[resp.Rcode]
		for _, rr := range resp.Answer {
			switch a := rr.(type) {
			case *dns.A:
				if qtype == dns.TypeA {
					r.Addresses = append(r.Addresses, a.A.String())
				}
			case *dns.AAAA:
				if qtype == dns.TypeAAAA {
					r.Addresses = append(r.Addresses, a.AAAA.String())
				}
			}
		}
		return r
	}
	r.Error = errors.Join(errs...).Error()
	return r
}
