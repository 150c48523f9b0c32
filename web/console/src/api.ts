// The console's API client: same-origin fetches with the session cookie, the
// session's CSRF token on every write, and the server-sent change stream.

export interface ApiError {
  code: number;
  reason?: string;
  message: string;
}

export class HttpError extends Error {
  constructor(public status: number, public body: ApiError) {
    super(body.message);
  }
}

let csrf = '';

export function setCsrf(token: string) {
  csrf = token;
}

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET') headers['X-CSRF-Token'] = csrf;
  const resp = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await resp.text();
  const data = text ? JSON.parse(text) : {};
  if (!resp.ok) {
    if (resp.status === 401 && path !== '/api/login') window.dispatchEvent(new Event('console:signed-out'));
    throw new HttpError(resp.status, data as ApiError);
  }
  return data as T;
}

export const get = <T>(path: string) => call<T>('GET', path);

// prefetched holds reads started before the screen that needs them mounts:
// the overview is asked for together with the session instead of after it.
const prefetched = new Map<string, Promise<unknown>>();

export function prefetch(path: string) {
  const p = get(path);
  p.catch(() => undefined); // a failure is the screen's to show, if it is used
  prefetched.set(path, p);
}

// takePrefetched returns a prefetched read of path once, if there is one.
export function takePrefetched<T>(path: string): Promise<T> | undefined {
  const p = prefetched.get(path);
  prefetched.delete(path);
  return p as Promise<T> | undefined;
}

export function dropPrefetched() {
  prefetched.clear();
}
export const post = <T>(path: string, body?: unknown) => call<T>('POST', path, body ?? {});

export interface SessionInfo {
  user: string;
  groups?: string[];
  csrfToken: string;
}

export interface ClusterView {
  name: string;
  role: string;
  reachable?: boolean;
  message?: string;
  lastProbe?: string;
  version?: string;
}

export interface ZoneView {
  namespace: string;
  name: string;
  displayName?: string;
  backend: string;
  ready?: boolean;
  clusters: ClusterView[];
}

export interface GroupView {
  namespace: string;
  name: string;
  zone?: string;
  activeCluster?: string;
  clusters?: string[];
  vms: number;
  state?: string;
  health: string;
  failoverReady: boolean;
  lagSeconds?: number;
  objectiveSeconds?: number;
  lagLevel: 'ok' | 'warning' | 'danger' | 'unknown';
  atRisk: boolean;
  testActive: boolean;
  activeRPOEvent?: string;
  message?: string;
}

export interface RPOView {
  namespace: string;
  name: string;
  group: string;
  objectiveSeconds: number;
  peakLagSeconds: number;
  start: string;
  end?: string;
  state: string;
  affectedVMs?: string[];
  message?: string;
}

export interface StepView {
  phase: string;
  time: string;
  message?: string;
  durationSeconds: number;
}

export interface ConditionView {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

export interface OperationView {
  kind: 'FailoverRequest' | 'TestFailover' | 'ProtectionRequest';
  namespace: string;
  name: string;
  group: string;
  type?: string;
  target?: string;
  source?: string;
  vm?: string;
  phase: string;
  finished: boolean;
  succeeded: boolean;
  created: string;
  createdBy?: string;
  durationSeconds: number;
  message?: string;
  history: StepView[];
  conditions?: ConditionView[];
  lock?: string;
  taints?: string;
  checks?: { vm: string; check: string; passed: boolean; message?: string }[];
  // how the group's boot plan ran: a failover's on its target, a test
  // failover's over its test VMs
  boot?: BootRun;
}

// BootPlan is a group's boot plan, its implicit stage last. A step is shown
// by its image only.
export interface BootPlan {
  onStageTimeout: string;
  stages: {
    name: string;
    virtualMachines?: string[];
    selector?: string;
    gate: { type: string; port?: number; path?: string };
    timeoutSeconds: number;
    preStart?: { image: string };
    postStart?: { image: string };
    implicit?: boolean;
  }[];
}

export interface BootStageRun {
  name: string;
  phase: string;
  virtualMachines?: string[];
  waiting?: string[];
  start?: string;
  vmsStart?: string;
  end?: string;
  // absent for a stage that never started
  durationSeconds?: number;
  message?: string;
}

export interface BootRun {
  start?: string;
  completion?: string;
  stopped: boolean;
  stoppedAt?: string;
  notStarted?: string[];
  advice?: string;
  stages: BootStageRun[];
}

export interface NamespaceView {
  name: string;
  zones: ZoneView[];
  groups: GroupView[];
  rpoEvents: RPOView[];
  unfinished: OperationView[];
  hidden?: string[];
}

export interface Overview {
  summary: {
    protectedVMs: number;
    groups: number;
    groupsAtRisk: number;
    openRPOEvents: number;
    unfinishedRequests: number;
  };
  namespaces: NamespaceView[];
}

export interface VolumeState {
  volume: number;
  connectionState?: string;
  diskState?: string;
  peerDiskState?: string;
  replicationState?: string;
  percentInSync?: string;
  outOfSyncBytes?: number;
  lagSeconds?: number;
  lastInSyncTime?: string;
}

export interface VMState {
  name: string;
  namespace: string;
  printableStatus?: string;
  ready?: boolean;
  message?: string;
}

export interface GroupDetail {
  group: GroupView;
  zone?: ZoneView;
  vms: VMState[];
  sites: {
    cluster: string;
    currentState?: string;
    inSync?: boolean;
    lastSyncTime?: string;
    message?: string;
    // the VMs' state on this cluster, as its workload copy reports it
    virtualMachines?: VMState[];
  }[];
  replication: { name: string; namespace: string; drbdResource?: string; failoverReady?: boolean; volumes?: VolumeState[] }[];
  operations: OperationView[];
  rpoEvents: RPOView[];
  members: { name: string; namespace: string }[];
  notes?: string[];
  boot?: BootPlan;
  drill?: DrillView;
  consistency: ConsistencyView;
}

// A group's drill schedule (spec.drill) and its drills (status.drill), as
// kubectl siterecovery status reports it (internal/report DrillSchedule).
export interface DrillView {
  schedule: string;
  suspended?: boolean;
  targetCluster: string;
  keep?: number;
  nextScheduleTime?: string;
  lastScheduleTime?: string;
  lastDrill?: string;
  lastResult?: string;
  lastSuccessfulTime?: string;
  active?: string;
  message?: string;
}

// What a group asks of its replication points and what the last one reached.
export interface ConsistencyView {
  mode: string;
  freezeTimeoutSeconds?: number;
  lastPoint?: {
    time: string;
    source: string;
    consistency: string;
    crashConsistentVMs?: string[];
    frozenMilliseconds?: number;
    message?: string;
  };
}

export interface Preflight {
  target: string;
  // unknown: the check could not be made (message says why)
  checks: { name: string; passed: boolean; unknown?: boolean; message: string }[];
  passed: boolean;
  dataLossSeconds?: number;
}

// LagHistory is a group's replication lag over a window, from Prometheus or
// from the samples the console took.
export interface LagHistory {
  source: 'prometheus' | 'console';
  from: string;
  to: string;
  objectiveSeconds: number;
  samples: { at: string; seconds: number }[];
  since?: string;
  note?: string;
}

// ZoneVMs are the VMs of a zone's primary cluster, for users who may read
// that cluster's kubeconfig Secret; reason says why they are not shown otherwise.
export interface ZoneVMs {
  cluster: string;
  visible: boolean;
  reason?: string;
  vms: { namespace: string; name: string; group?: string }[];
}

// subscribe calls onChange (debounced) whenever the server reports a change
// to something the user may watch. It returns the unsubscribe function.
//
// The server ends a stream with "ended" when the session is over, and with
// "renew" when the token its watches run with was replaced or is about to
// expire: a new stream is opened at once (its request refreshes the token)
// and the page re-reads, since a change may have come between the two.
export function subscribe(onChange: () => void): () => void {
  let timer: number | undefined;
  let es: EventSource;
  const open = () => {
    es = new EventSource('/api/events');
    es.addEventListener('change', () => {
      window.clearTimeout(timer);
      timer = window.setTimeout(onChange, 150);
    });
    es.addEventListener('renew', () => {
      es.close();
      open();
      onChange();
    });
    es.addEventListener('ended', () => {
      es.close();
      window.dispatchEvent(new Event('console:signed-out'));
    });
  };
  open();
  return () => {
    window.clearTimeout(timer);
    es.close();
  };
}

// The compliance report of a DR namespace (internal/report).
export interface ComplianceGroup {
  name: string;
  rpo: {
    objectiveSeconds: number;
    measuredFrom: string;
    measuredTo: string;
    measuredSeconds: number;
    breachSeconds: number;
    metRatio?: number;
    episodes: number;
    worst?: { name: string; start: string; end?: string; active: boolean; durationSeconds: number; peakLagSeconds: number };
    note?: string;
  };
  lastDrill?: {
    name: string;
    scheduled: boolean;
    phase: string;
    passed: boolean;
    checks: { vm: string; check: string; passed: boolean; message?: string }[];
    rtoSeconds?: number;
    note?: string;
  };
  lastSuccessfulDrillTime?: string;
  lastFailover?: { name: string; outcome: string; rtoSeconds?: number; fromHistory?: boolean };
}

export interface ComplianceReport {
  namespace: string;
  from: string;
  to: string;
  window: string;
  windows: string[];
  groups: ComplianceGroup[];
  notes?: string[];
}
