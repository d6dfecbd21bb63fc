package breakglass

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/calricon/driftscan/discover"
)

// DefaultNamespace is where a reconciler keeps its objects unless told
// otherwise: argocd for Argo CD, flux-system for Flux; "" for another.
func DefaultNamespace(from string) string {
	switch from {
	case discover.FromArgoCD:
		return "argocd"
	case discover.FromFlux:
		return "flux-system"
	}
	return ""
}

// Find finds the reconciler object of app in namespace ns: an Application
// for Argo CD, a Kustomization or else a HelmRelease for Flux, named like
// the app.
func Find(ctx context.Context, client dynamic.Interface, from, ns, app string) (Target, error) {
	var candidates []schema.GroupVersionResource
	var what string
	switch from {
	case discover.FromArgoCD:
		candidates, what = []schema.GroupVersionResource{Application}, "Application"
	case discover.FromFlux:
		candidates, what = []schema.GroupVersionResource{Kustomization, HelmRelease}, "Kustomization or HelmRelease"
	default:
		return Target{}, fmt.Errorf("reconciler %q: want %s or %s", from, discover.FromArgoCD, discover.FromFlux)
	}
	for _, gvr := range candidates {
		_, err := client.Resource(gvr).Namespace(ns).Get(ctx, app, metav1.GetOptions{})
		switch {
		case err == nil:
			return Target{Resource: gvr, Namespace: ns, Name: app}, nil
		case !apierrors.IsNotFound(err):
			return Target{}, fmt.Errorf("app %s: get %s %s/%s: %w", app, gvr.Resource, ns, app, err)
		}
	}
	return Target{}, fmt.Errorf("app %s: no %s named %s in namespace %s", app, what, app, ns)
}

// WhoAmI asks the API server who the client's identity is (a
// SelfSubjectReview), for the audit annotation AnnotationBy. It never guesses:
// when the server cannot say, the error says why.
func WhoAmI(ctx context.Context, client kubernetes.Interface) (string, error) {
	r, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("who am I (SelfSubjectReview): %w", err)
	}
	if r.Status.UserInfo.Username == "" {
		return "", fmt.Errorf("who am I (SelfSubjectReview): the API server names no user")
	}
	return r.Status.UserInfo.Username, nil
}
