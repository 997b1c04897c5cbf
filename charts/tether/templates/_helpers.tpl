{{- define "tether.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "tether.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Name of a component's objects: <fullname>-<component>. */}}
{{- define "tether.component" -}}
{{- printf "%s-%s" (include "tether.fullname" .root) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "tether.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "tether.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tether
{{- end -}}

{{/* Selector labels of a component: dict "root" $ "component" "relay". */}}
{{- define "tether.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tether.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* An image: dict "root" $ "repository" … "component" "relay"; pinned by image.digests.<component> when set. */}}
{{- define "tether.image" -}}
{{- printf "%s/%s:%s" .root.Values.image.registry .repository (default .root.Chart.AppVersion .root.Values.image.tag) -}}
{{- with dig "digests" (required "tether.image needs a component (controller, relay, runner)" .component) "" .root.Values.image }}@{{ . }}{{ end -}}
{{- end -}}

{{/* Secret names: the user's existing Secret or the one the chart creates. */}}
{{- define "tether.twilioSecret" -}}
{{- default (printf "%s-twilio" (include "tether.fullname" .)) .Values.secrets.twilio.existingSecret -}}
{{- end -}}
{{- define "tether.runnerSecret" -}}
{{- default (printf "%s-runner" (include "tether.fullname" .)) .Values.secrets.runner.existingSecret -}}
{{- end -}}
{{- define "tether.relaySecret" -}}
{{- default (printf "%s-relay" (include "tether.fullname" .)) .Values.secrets.relay.existingSecret -}}
{{- end -}}
{{/* GitHub: the App (all of id, installationId and a key, or none), its key's Secret, the relay's token Secret. */}}
{{- define "tether.githubApp" -}}
{{- with .Values.github.app }}{{ if or .id .installationId .existingSecret .privateKey }}true{{ end }}{{ end -}}
{{- end -}}
{{- define "tether.githubAppSecret" -}}
{{- default (printf "%s-github-app" (include "tether.fullname" .)) .Values.github.app.existingSecret -}}
{{- end -}}
{{- define "tether.relayGithubSecret" -}}
{{- include "tether.component" (dict "root" . "component" "relay-github") -}}
{{- end -}}
{{- define "tether.pullRequestsConfigMap" -}}
{{- include "tether.component" (dict "root" . "component" "pull-requests") -}}
{{- end -}}
{{/* Where the relay and runners find their GitHub token file (a Secret volume). */}}
{{- define "tether.githubTokenDir" -}}/var/run/secrets/tether/github{{- end -}}
{{- define "tether.githubAppKeyDir" -}}/var/run/secrets/tether/github-app{{- end -}}
{{/* stringData of the chart-made Secrets, also hashed into the relay's Pod template (checksum/secrets). */}}
{{- define "tether.twilioSecretData" -}}
{{ .Values.secrets.twilio.accountSidKey }}: {{ .Values.secrets.twilio.accountSid | quote }}
{{ .Values.secrets.twilio.authTokenKey }}: {{ .Values.secrets.twilio.authToken | quote }}
{{- end -}}
{{/* Generated values are read back with lookup; made once per render (memo in $.Values) so the Secret and the checksum agree. */}}
{{- define "tether.relaySecretData" -}}
{{- if not (hasKey .Values.secrets.relay "renderedData") -}}
{{- $current := lookup "v1" "Secret" .Release.Namespace (include "tether.relaySecret" .) -}}
{{- $data := dict -}}
{{- if and $current $current.data }}{{ $data = $current.data }}{{ end -}}
{{- $key := .Values.secrets.relay.mediaSigningKey | default (index $data "RELAY_MEDIA_SIGNING_KEY" | default "" | b64dec) | default (randAlphaNum 48) -}}
{{- $phoneKey := .Values.secrets.relay.phoneHashKey | default (index $data "TETHER_PHONE_HASH_KEY" | default "" | b64dec) | default (randAlphaNum 48) -}}
{{- $chat := .Values.secrets.relay.webChatToken | default (index $data "RELAY_WEB_CHAT_TOKEN" | default "" | b64dec) | default (randAlphaNum 32) -}}
{{- $out := printf "RELAY_MEDIA_SIGNING_KEY: %s" ($key | quote) -}}
{{- /* The relay's and the controller's key of phone hashes: a new one renames every phone's objects. */ -}}
{{- $out = printf "%s\nTETHER_PHONE_HASH_KEY: %s" $out ($phoneKey | quote) -}}
{{- if include "tether.webChatEnabled" . }}{{ $out = printf "%s\nRELAY_WEB_CHAT_TOKEN: %s" $out ($chat | quote) }}{{ end -}}
{{- $_ := set .Values.secrets.relay "renderedData" $out -}}
{{- $_ := set .Values.secrets.relay "renderedPhoneHashKey" $phoneKey -}}
{{- end -}}
{{- .Values.secrets.relay.renderedData -}}
{{- end -}}
{{- define "tether.relaySecretsChecksum" -}}
{{- $parts := list -}}
{{- if and .Values.secrets.twilio.accountSid (not .Values.secrets.twilio.existingSecret) }}{{ $parts = append $parts (include "tether.twilioSecretData" .) }}{{ end -}}
{{- if not .Values.secrets.relay.existingSecret }}{{ $parts = append $parts (include "tether.relaySecretData" .) }}{{ end -}}
{{- $parts | toJson | sha256sum -}}
{{- end -}}
{{/* The controller holds the phone hash key too: a new key must restart it with the relay. */}}
{{- define "tether.phoneHashKeyChecksum" -}}
{{- if not .Values.secrets.relay.existingSecret }}{{ $_ := include "tether.relaySecretData" . }}{{ end -}}
{{- .Values.secrets.relay.renderedPhoneHashKey | default "existingSecret" | sha256sum -}}
{{- end -}}
{{- define "tether.twilioEnabled" -}}
{{- if or .Values.secrets.twilio.existingSecret .Values.secrets.twilio.accountSid -}}true{{- end -}}
{{- end -}}

{{/* The relay needs a transport: the web chat is on when asked for or when Twilio is not configured. */}}
{{- define "tether.webChatEnabled" -}}
{{- if or .Values.relay.webChat.enabled (not (include "tether.twilioEnabled" .)) -}}true{{- end -}}
{{- end -}}

{{/* Where runner Pods, workspaces, identities and the runner Secret live. */}}
{{- define "tether.runnerNamespace" -}}
{{- default (printf "%s-runners" .Release.Namespace | trunc 63 | trimSuffix "-") .Values.runner.namespace -}}
{{- end -}}

{{- define "tether.relayUrl" -}}
{{- if .Values.hostNetwork.enabled -}}
{{- printf "http://127.0.0.1:%v" .Values.relay.port -}}
{{- else -}}
{{- printf "http://%s.%s.svc:%v" (include "tether.component" (dict "root" . "component" "relay")) .Release.Namespace .Values.relay.service.port -}}
{{- end -}}
{{- end -}}

{{/* Host-network / loopback test tier: the API server's address over the Service's (container env entries). */}}
{{- define "tether.apiServerEnv" -}}
{{- with .Values.hostNetwork.apiServer }}
{{- if $.Values.hostNetwork.enabled }}
- name: KUBERNETES_SERVICE_HOST
  value: {{ (splitList ":" .) | first | quote }}
- name: KUBERNETES_SERVICE_PORT
  value: {{ (splitList ":" .) | last | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* httpGet probe target: the named port, on 127.0.0.1 in the host-network tier. */}}
{{- define "tether.probeTarget" -}}
port: {{ .port }}{{ if .root.Values.hostNetwork.enabled }}, host: 127.0.0.1{{ end }}
{{- end -}}

{{/* A component's Pod and container security contexts (values controller.*, relay.*): the schema keeps
them Pod Security "restricted" (no privilege, non-root, seccomp); runAsUser/runAsGroup/fsGroup may be unset (OpenShift). */}}
{{- define "tether.podSecurityContext" -}}
{{- toYaml .podSecurityContext -}}
{{- end -}}
{{- define "tether.containerSecurityContext" -}}
{{- toYaml .securityContext -}}
{{- end -}}

{{/* A Deployment's extra scheduling fields (its values: controller.* or relay.*), each only when set. */}}
{{- define "tether.podScheduling" -}}
{{- with .priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- with .topologySpreadConstraints }}
topologySpreadConstraints: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Runner Pods' NO_PROXY with a proxy: the operator's list, the relay's host and loopback (never proxied). */}}
{{- define "tether.runnerNoProxy" -}}
{{- $p := .Values.runner.proxy -}}
{{- if or $p.httpsProxy $p.httpProxy -}}
{{- $hosts := without (splitList "," $p.noProxy) "" -}}
{{- $hosts = append $hosts (urlParse (include "tether.relayUrl" .)).hostname -}}
{{- concat $hosts (list "127.0.0.1" "localhost") | uniq | join "," -}}
{{- else -}}
{{- $p.noProxy -}}
{{- end -}}
{{- end -}}

{{/* The runner container's model and proxy variables as the controller sets them ("" = absent), as JSON; the egress proxy's URL among them. */}}
{{- define "tether.runnerModelEnv" -}}
{{- $r := .Values.runner -}}
{{- $proxied := or $r.proxy.httpsProxy $r.proxy.httpProxy -}}
{{- toJson (dict "TETHER_CLAUDE_MODEL" $r.model "ANTHROPIC_BASE_URL" $r.anthropicBaseUrl "HTTPS_PROXY" $r.proxy.httpsProxy "HTTP_PROXY" $r.proxy.httpProxy "NO_PROXY" (include "tether.runnerNoProxy" .) "NODE_USE_ENV_PROXY" (ternary "1" "" (not (empty $proxied))) "https_proxy" "" "http_proxy" "" "no_proxy" "" "ALL_PROXY" "" "all_proxy" "" "TETHER_EGRESS_URL" (ternary (include "tether.egressUrl" .) "" (not (empty (include "tether.egressEnabled" .))))) -}}
{{- end -}}

{{/* The host the Ingress serves: relay.ingress.host, else the host of relay.publicUrl (Twilio signs that URL). */}}
{{- define "tether.ingressHost" -}}
{{- default (lower (urlParse .Values.relay.publicUrl).hostname) .Values.relay.ingress.host -}}
{{- end -}}

{{/* A dollar value (a number or a string) as the decimal text the relay and the controller read: dict "name" "relay.dailyBudgetUsd" "value" v. */}}
{{- define "tether.dollars" -}}
{{- $v := .value -}}
{{- $text := toString $v -}}
{{- if and (not (kindIs "string" $v)) (eq (float64 $v) (floor (float64 $v))) -}}
{{- $text = printf "%d" (int64 $v) -}}
{{- end -}}
{{- if not (regexMatch "^[0-9]{1,6}([.][0-9]{1,2})?$" $text) -}}
{{- fail (printf "%s must be US dollars with at most 6 digits and 2 decimals, e.g. 25 or 2.50 (got %v)" .name $v) -}}
{{- end -}}
{{- $text -}}
{{- end -}}

{{/* Checks of the install-path values: publicUrl, the Ingress host, phone numbers as strings. */}}
{{- define "tether.validateInstall" -}}
{{- $r := .Values.relay -}}
{{- if not $r.publicUrl -}}
{{- fail "relay.publicUrl is required: the public URL Twilio calls (the webhook is <publicUrl>/webhook), e.g. --set relay.publicUrl=https://tether.example.com" -}}
{{- end -}}
{{- $publicHost := lower (urlParse $r.publicUrl).hostname -}}
{{- if and $r.ingress.host (ne (lower $r.ingress.host) $publicHost) -}}
{{- fail (printf "relay.ingress.host %q is not the host of relay.publicUrl (%q): Twilio signs publicUrl, so webhooks through that Ingress would fail their signature check. Leave relay.ingress.host empty (it defaults to publicUrl's host) or change relay.publicUrl" $r.ingress.host $publicHost) -}}
{{- end -}}
{{- if and $r.ingress.enabled (regexMatch "^[0-9.]+$|:" $publicHost) -}}
{{- fail (printf "relay.ingress.enabled needs a host name in relay.publicUrl, not the address %q (an Ingress rule serves names only)" $publicHost) -}}
{{- end -}}
{{- range $i, $n := $r.allowedNumbers -}}
{{- if not (kindIs "string" $n) -}}
{{- fail (printf "relay.allowedNumbers[%d] is the number %d, not a string: helm --set reads +14155550123 as a number and drops the +. Use --set-string 'relay.allowedNumbers={+14155550123}' (or quote the number in a values file)" $i (int64 $n)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Fails rendering on combinations the schema cannot express. */}}
{{- define "tether.validate" -}}
{{- include "tether.validateInstall" . -}}
{{- if and (gt (int .Values.controller.replicas) 1) (not .Values.controller.leaderElection.enabled) -}}
{{- fail "controller.replicas > 1 needs controller.leaderElection.enabled=true (two controllers must never reconcile at once)" -}}
{{- end -}}
{{- $p := .Values.relay.media.persistence -}}
{{- if and (gt (int .Values.relay.replicas) 1) $p.enabled (ne $p.accessMode "ReadWriteMany") -}}
{{- fail "relay.replicas > 1 with relay.media.persistence needs relay.media.persistence.accessMode=ReadWriteMany (every replica serves the same media)" -}}
{{- end -}}
{{- if and .Values.relay.twilio.whatsappFrom (not (include "tether.twilioEnabled" .)) -}}
{{- fail "relay.twilio.whatsappFrom is set but there are no Twilio credentials: set secrets.twilio.existingSecret or secrets.twilio.accountSid/authToken" -}}
{{- end -}}
{{- if and (include "tether.twilioEnabled" .) (not .Values.relay.twilio.whatsappFrom) -}}
{{- fail "Twilio credentials are set but relay.twilio.whatsappFrom (whatsapp:+1…) is empty" -}}
{{- end -}}
{{- range $component := list "controller" "relay" "runner" "egress" -}}
{{- range $key, $_ := (index $.Values $component).podLabels -}}
{{- if or (hasPrefix "app.kubernetes.io/" $key) (hasPrefix "tether.dev/" $key) -}}
{{- fail (printf "%s.podLabels: %q is one of Tether's own labels (app.kubernetes.io/*, tether.dev/*), which select its Pods" $component $key) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if eq (int64 .Values.runner.securityContext.runAsUser) (int64 .Values.runner.securityContext.agentRunAsUser) -}}
{{- fail "runner.securityContext.agentRunAsUser must differ from runAsUser: the agent container may not be the supervisor, which holds the credentials" -}}
{{- end -}}
{{- if and .Values.secrets.twilio.accountSid (not .Values.secrets.twilio.authToken) -}}
{{- fail "secrets.twilio.accountSid needs secrets.twilio.authToken" -}}
{{- end -}}
{{- include "tether.validateGithub" . -}}
{{- $proxy := .Values.runner.proxy -}}
{{- if and .Values.egress.enabled (or $proxy.httpsProxy $proxy.httpProxy) -}}
{{- fail "runner.proxy is set while egress.enabled=true: with the egress proxy on it is the runners' one way out, and a second proxy beside it would be another. Set egress.enabled=false to keep your own proxy (runners then reach the internet through it, unchecked by Tether), or clear runner.proxy.httpsProxy and runner.proxy.httpProxy" -}}
{{- end -}}
{{- end -}}

{{/* GitHub and people: what the schema cannot say. */}}
{{- define "tether.validateGithub" -}}
{{- $app := .Values.github.app -}}
{{- if include "tether.githubApp" . -}}
{{- if not (and $app.id $app.installationId) -}}
{{- fail "github.app needs both id and installationId (the App's id and its installation's, numbers as strings)" -}}
{{- end -}}
{{- if not (or $app.existingSecret $app.privateKey) -}}
{{- fail "github.app needs its private key: github.app.existingSecret (key github.app.privateKeyKey) or github.app.privateKey" -}}
{{- end -}}
{{- if and $app.existingSecret $app.privateKey -}}
{{- fail "github.app: set existingSecret or privateKey, not both" -}}
{{- end -}}
{{- if .Values.github.token.existingSecret -}}
{{- fail "github.token is the personal-token alternative to github.app: set one of them" -}}
{{- end -}}
{{- end -}}
{{- range $i, $p := .Values.people -}}
{{- if not (kindIs "string" $p.phone) -}}
{{- fail (printf "people[%d].phone is not a string: quote it in the values file (\"+14155550123\"); --set reads it as a number and drops the +" $i) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The repository host list (the controller and the relay read it): relay.repo.url's and relay.repositories' hosts (or folders), and controller.repositoryHosts. */}}
{{- define "tether.repoHosts" -}}
{{- $own := list -}}
{{- range prepend (.Values.relay.repositories | default list) .Values.relay.repo -}}
{{- $own = append $own (ternary .url (urlParse .url).host (hasPrefix "/" .url)) -}}
{{- end -}}
{{- concat $own .Values.controller.repositoryHosts | uniq | join "," -}}
{{- end -}}

{{/* The egress proxy (docs/chart.md, "Egress"): its Secret, its key (generated once, read back with lookup), its URL. */}}
{{- define "tether.egressEnabled" -}}
{{- if .Values.egress.enabled -}}true{{- end -}}
{{- end -}}
{{- define "tether.egressSecret" -}}
{{- default (include "tether.component" (dict "root" . "component" "egress")) .Values.secrets.egress.existingSecret -}}
{{- end -}}
{{- define "tether.egressGrants" -}}
{{- include "tether.component" (dict "root" . "component" "egress-grants") -}}
{{- end -}}
{{- define "tether.egressKey" -}}
{{- if not (hasKey .Values.secrets.egress "renderedKey") -}}
{{- $current := lookup "v1" "Secret" .Release.Namespace (include "tether.egressSecret" .) -}}
{{- $data := dict -}}
{{- if and $current $current.data }}{{ $data = $current.data }}{{ end -}}
{{- $key := .Values.secrets.egress.key | default (index $data "TETHER_EGRESS_KEY" | default "" | b64dec) | default (randAlphaNum 48) -}}
{{- $_ := set .Values.secrets.egress "renderedKey" $key -}}
{{- end -}}
{{- .Values.secrets.egress.renderedKey -}}
{{- end -}}
{{/* The controller and the proxy hold the key: a new one restarts both. */}}
{{- define "tether.egressKeyChecksum" -}}
{{- if .Values.secrets.egress.existingSecret }}{{ "existingSecret" | sha256sum }}{{ else }}{{ include "tether.egressKey" . | sha256sum }}{{ end -}}
{{- end -}}
{{/* The proxy URL runner containers get (no credentials): the Service, or loopback in the host-network tier. */}}
{{- define "tether.egressUrl" -}}
{{- if .Values.hostNetwork.enabled -}}
{{- printf "http://127.0.0.1:%v" .Values.egress.port -}}
{{- else -}}
{{- printf "http://%s.%s.svc:%v" (include "tether.component" (dict "root" . "component" "egress")) .Release.Namespace .Values.egress.port -}}
{{- end -}}
{{- end -}}
{{/* What the supervisor may reach through the proxy: the repository hosts (not local folders), GitHub's API, the model API. */}}
{{- define "tether.egressSupervisorAllow" -}}
{{- $hosts := list -}}
{{- range splitList "," (include "tether.repoHosts" .) -}}
{{- if and . (not (hasPrefix "/" .)) }}{{ $hosts = append $hosts (lower .) }}{{ end -}}
{{- end -}}
{{- $hosts = append $hosts (lower (urlParse .Values.runner.githubApiUrl).host) -}}
{{- $model := .Values.runner.anthropicBaseUrl | default "https://api.anthropic.com" -}}
{{- $hosts = append $hosts (lower (urlParse $model).host) -}}
{{- $hosts | uniq | join "," -}}
{{- end -}}
{{/* The egress proxy's blocked ranges, IPv4 or IPv6 only: dict "cidrs" list "v6" bool. */}}
{{- define "tether.cidrsOf" -}}
{{- $out := list -}}
{{- range .cidrs }}{{ if eq (contains ":" .) $.v6 }}{{ $out = append $out . }}{{ end }}{{ end -}}
{{- toJson $out -}}
{{- end -}}

{{/* NetworkPolicy rules both policies use (runner, egress proxy). The API server's addresses: networkPolicy.apiServer.cidrs, else the `kubernetes` EndpointSlice read at install time; as JSON. */}}
{{- define "tether.apiServerCidrs" -}}
{{- $cidrs := .Values.networkPolicy.apiServer.cidrs -}}
{{- if not $cidrs -}}
{{- $ips := list -}}
{{- $slice := lookup "discovery.k8s.io/v1" "EndpointSlice" "default" "kubernetes" -}}
{{- range ($slice.endpoints | default list) }}{{ $ips = concat $ips .addresses }}{{ end -}}
{{- if not $ips -}}
{{- $endpoints := lookup "v1" "Endpoints" "default" "kubernetes" -}}
{{- range ($endpoints.subsets | default list) }}{{ range .addresses }}{{ $ips = append $ips .ip }}{{ end }}{{ end -}}
{{- end -}}
{{- range $ips }}{{ $cidrs = append $cidrs (ternary (printf "%s/128" .) (printf "%s/32" .) (contains ":" .)) }}{{ end -}}
{{- end -}}
{{- toJson $cidrs -}}
{{- end -}}
{{/* Cluster DNS: the egress proxy's peer; runner Pods' only with egress off (with it on they resolve no names). */}}
{{- define "tether.dnsEgress" -}}
{{- $np := .Values.networkPolicy -}}
- to:
    - namespaceSelector:
        matchLabels: {{- toYaml $np.dns.namespaceLabels | nindent 10 }}
      podSelector:
        matchLabels: {{- toYaml $np.dns.podLabels | nindent 10 }}
    {{- range $np.dns.cidrs }}
    - ipBlock: { cidr: {{ . | quote }} }
    {{- end }}
  ports:
    - { protocol: UDP, port: 53 }
    - { protocol: TCP, port: 53 }
{{- end -}}
{{/* The API server. Unknown addresses (helm template, no access to the kubernetes EndpointSlice): with
the egress proxy on the render fails (any other rule would open the cluster's Pods to the agent on these
ports); with it off, these ports to any address. */}}
{{- define "tether.apiServerEgress" -}}
{{- $np := .Values.networkPolicy -}}
- to:
    {{- range include "tether.apiServerCidrs" . | fromJsonArray }}
    - ipBlock: { cidr: {{ . | quote }} }
    {{- else }}
    {{- if include "tether.egressEnabled" . }}
    {{- fail "networkPolicy.apiServer.cidrs is required here: the API server's addresses could not be looked up (helm template, a GitOps tool, or no read access to the kubernetes EndpointSlice in namespace default), and with egress.enabled the runner NetworkPolicy allows the API server by address only. Set networkPolicy.apiServer.cidrs to the API server's endpoint addresses (kubectl get endpointslices -n default -l kubernetes.io/service-name=kubernetes), e.g. --set 'networkPolicy.apiServer.cidrs={10.0.0.1/32}'" }}
    {{- end }}
    - ipBlock: { cidr: 0.0.0.0/0 }
    {{- end }}
  ports:
    {{- range $np.apiServer.ports }}
    - { protocol: TCP, port: {{ . }} }
    {{- end }}
{{- end -}}
