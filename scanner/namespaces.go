package scanner

import "context"

// namespaces is what the scan knows of the namespaces before it lists
// anything else.
type namespaces struct {
	// declared are the namespaces Git's objects are in.
	declared map[string]bool
	// labels are the live namespaces' labels, by name; failed, why a
	// declared namespace that exists could not be read.
	labels map[string]map[string]string
	failed map[string]error
	// inCluster is how many namespaces the cluster has, -1 when they could
	// not be listed.
	inCluster int
}

// readNamespaces lists the namespaces (or gets the declared ones when
// listing them is forbidden) before the scan lists anything else, so it
// knows which share of the cluster its apps cover.
func (s *scan) readNamespaces(ctx context.Context) namespaces {
	ns := namespaces{declared: map[string]bool{}, inCluster: -1}
	for _, d := range s.objects {
		if n := d.key.ns; n != "" {
			ns.declared[n] = true
		}
	}
	names := make([]string, 0, len(ns.declared))
	for n := range ns.declared {
		names = append(names, n)
	}
	var listed bool
	ns.labels, ns.failed, listed = s.c.namespaceLabels(ctx, names)
	if listed {
		ns.inCluster = len(ns.labels)
	}
	return ns
}

// clusterWide reports whether a kind whose objects are in the namespaces
// nss is listed once cluster-wide rather than once per namespace: when they
// span more than ClusterWideAbove namespaces and more than half of the
// cluster's, or the cluster's cannot be counted. A cluster-wide LIST makes
// the API server serialize every namespace's objects; a shard's few
// namespaces of many cost it far less one by one, for a few more requests.
func (s *scan) clusterWide(nss map[string]bool) bool {
	n := len(nss)
	if nss[""] {
		n--
	}
	if n <= s.opts.ClusterWideAbove {
		return false
	}
	return s.namespaces.inCluster < 0 || 2*n > s.namespaces.inCluster
}
