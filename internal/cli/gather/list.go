package gather

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

func listOptions(selector string) metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: selector}
}
