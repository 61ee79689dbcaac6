package decorator

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"metascript.dev/metascript/apis/v1alpha1"
)

// annotationSelector is a label selector over annotations. Annotation values are free text,
// so unlike labels.Selector it puts no syntax rule on the values it compares.
type annotationSelector struct {
	match map[string]string
	exprs []metav1.LabelSelectorRequirement
}

func newAnnotationSelector(as *v1alpha1.AnnotationSelector) (*annotationSelector, error) {
	for i, e := range as.MatchExpressions {
		switch e.Operator {
		case metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn:
			if len(e.Values) == 0 {
				return nil, fmt.Errorf("matchExpressions[%d]: operator %s needs values", i, e.Operator)
			}
		case metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist:
			if len(e.Values) > 0 {
				return nil, fmt.Errorf("matchExpressions[%d]: operator %s takes no values", i, e.Operator)
			}
		default:
			return nil, fmt.Errorf("matchExpressions[%d]: unknown operator %q (In, NotIn, Exists, DoesNotExist)", i, e.Operator)
		}
		if e.Key == "" {
			return nil, fmt.Errorf("matchExpressions[%d]: key is required", i)
		}
	}
	return &annotationSelector{match: as.MatchAnnotations, exprs: as.MatchExpressions}, nil
}

// matches reports whether annotations satisfy every term, as a label selector would labels.
func (s *annotationSelector) matches(annotations map[string]string) bool {
	for k, v := range s.match {
		if got, ok := annotations[k]; !ok || got != v {
			return false
		}
	}
	for _, e := range s.exprs {
		v, ok := annotations[e.Key]
		switch e.Operator {
		case metav1.LabelSelectorOpIn:
			if !ok || !slices.Contains(e.Values, v) {
				return false
			}
		case metav1.LabelSelectorOpNotIn:
			if ok && slices.Contains(e.Values, v) {
				return false
			}
		case metav1.LabelSelectorOpExists:
			if !ok {
				return false
			}
		case metav1.LabelSelectorOpDoesNotExist:
			if ok {
				return false
			}
		}
	}
	return true
}
