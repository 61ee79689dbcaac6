package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/kinds"
)

// maxReview bounds the body of one AdmissionReview: an object and its old version, each at
// most etcd's 1.5 MiB, and some room.
const maxReview = 8 << 20

// Handler serves admission.k8s.io/v1 AdmissionReviews of controller resources: it allows a
// CREATE or UPDATE of a controller resource the engine would run, and denies one it would
// refuse with a message that lists every problem, each located (Check), or, with Accounts,
// one naming a ServiceAccount its writer may not act as. An UPDATE that leaves
// the spec as it was (metadata only) is allowed unchecked. Other operations,
// subresources (status) and resources that are not controller resources are allowed
// untouched: the webhook configuration should not send them, and judging them is not this
// handler's business. It is safe for concurrent use.
type Handler struct {
	Options Options
	// Accounts, when set, is where the handler asks whether the user who writes a controller
	// may act as the ServiceAccount it names (accounts.go); a user who may not is refused.
	// Nil: accounts are not checked.
	Accounts authorizationclient.SubjectAccessReviewInterface
	// Log receives one line per review; nil discards.
	Log *slog.Logger
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an admission.k8s.io/v1 AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReview+1))
	if err != nil {
		http.Error(w, "reading the review: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) > maxReview {
		http.Error(w, fmt.Sprintf("review larger than %d bytes", maxReview), http.StatusRequestEntityTooLarge)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		http.Error(w, "decoding the AdmissionReview: "+err.Error(), http.StatusBadRequest)
		return
	}
	if review.Request == nil {
		http.Error(w, "the AdmissionReview has no request", http.StatusBadRequest)
		return
	}
	resp := h.Review(r, review.Request)
	resp.UID = review.Request.UID
	out := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Response: resp}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(out); err != nil && h.Log != nil {
		h.Log.Error("writing an admission response", "error", err.Error())
	}
}

// Review decides one admission request.
func (h *Handler) Review(r *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	kind := kinds.Lookup(req.Kind.Kind)
	switch {
	case req.Kind.Group != v1alpha1.GroupVersion.Group || kind == nil:
		return &admissionv1.AdmissionResponse{Allowed: true,
			Warnings: []string{fmt.Sprintf("metascript admission judges controller resources only (%s), not %s",
				strings.Join(kinds.Names(), ", "), req.Kind.String())}}
	case req.SubResource != "", req.Operation != admissionv1.Create && req.Operation != admissionv1.Update:
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	var problems []Problem
	v, err := hooks.DecodeJSON(req.Object.Raw)
	obj, isObject := v.(map[string]any)
	switch {
	case err != nil:
		problems = []Problem{{Err: fmt.Errorf("the object is not JSON: %v", err)}}
	case !isObject:
		problems = []Problem{{Err: fmt.Errorf("the object is not a JSON object")}}
	case unchangedSpec(req, obj):
		// Metadata only (labels, finalizers, a deletion under way): nothing the engine runs
		// changed, and refusing would strand a controller admitted before this webhook was.
		return &admissionv1.AdmissionResponse{Allowed: true}
	default:
		if kind.Namespaced && req.Namespace != "" {
			// The API server sets the namespace before admission; a review naming it only in
			// the request is read the same.
			meta, _ := obj["metadata"].(map[string]any)
			if meta != nil && meta["namespace"] == nil {
				meta["namespace"] = req.Namespace
			}
		}
		problems = Check(r.Context(), kind, obj, h.Options)
		if h.Accounts != nil {
			problems = append(problems, accountProblems(r.Context(), h.Accounts, kind, req, obj)...)
		}
	}
	ref := kind.Ref(key(req.Namespace, req.Name))
	if len(problems) == 0 {
		h.log(slog.LevelInfo, "allowed", ref, req)
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	msgs := make([]string, len(problems))
	causes := make([]metav1.StatusCause, len(problems))
	for i, p := range problems {
		msgs[i] = p.Error()
		causes[i] = metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Field: p.Path(), Message: p.Detail()}
	}
	msg := fmt.Sprintf("%s would not run: %s", ref, strings.Join(msgs, "; "))
	h.log(slog.LevelInfo, "denied", ref, req, "problems", msgs)
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
		Message: msg, Details: &metav1.StatusDetails{Name: req.Name, Group: req.Kind.Group, Kind: req.Kind.Kind, Causes: causes},
	}}
}

func (h *Handler) log(level slog.Level, decision, ref string, req *admissionv1.AdmissionRequest, attrs ...any) {
	if h.Log == nil {
		return
	}
	h.Log.Log(context.Background(), level, "admission review "+decision, append([]any{"controller", ref, "operation", string(req.Operation),
		"user", req.UserInfo.Username}, attrs...)...)
}

func key(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// unchangedSpec reports whether req is an UPDATE that leaves obj's spec as it was, or one of
// an object being deleted.
func unchangedSpec(req *admissionv1.AdmissionRequest, obj map[string]any) bool {
	if req.Operation != admissionv1.Update {
		return false
	}
	if meta, _ := obj["metadata"].(map[string]any); meta != nil && meta["deletionTimestamp"] != nil {
		return true
	}
	old, err := hooks.DecodeJSON(req.OldObject.Raw)
	if err != nil {
		return false
	}
	oldObj, _ := old.(map[string]any)
	return oldObj != nil && reflect.DeepEqual(oldObj["spec"], obj["spec"])
}
