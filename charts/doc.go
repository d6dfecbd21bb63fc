// Package charts holds driftscan's Helm chart (the driftscan folder) and
// renders it in process with the Helm SDK, the way `helm install
// --dry-run=client` does, for tests here and in other packages: the chart's
// goldens, its values schema, its RBAC on a real API server, and the CronJob's
// exact command line.
package charts
