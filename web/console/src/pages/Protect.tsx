import { useEffect, useMemo, useState } from 'react';
import {
  ActionGroup,
  Alert,
  Button,
  Card,
  CardBody,
  CardTitle,
  Form,
  FormGroup,
  FormHelperText,
  FormSelect,
  FormSelectOption,
  HelperText,
  HelperTextItem,
  PageSection,
  TextInput,
  Title,
} from '@patternfly/react-core';
import { get, Overview, OperationView, post, ZoneVMs } from '../api';
import { PhaseLabel } from '../components/Badges';
import { Problem } from '../components/Problem';
import { Timeline } from '../components/Timeline';
import { useLive } from '../live';
import { useQuery } from '../router';

// Protect creates a ProtectionRequest for a VM and follows its phases. The
// admission webhooks' denials show inline with their message.
export function Protect() {
  const q = useQuery();
  const { data: overview } = useLive<Overview>('/api/overview');
  const [ns, setNs] = useState(q.get('ns') ?? '');
  const [zone, setZone] = useState(q.get('zone') ?? '');
  const [group, setGroup] = useState(q.get('group') ?? '');
  const [vmNamespace, setVmNamespace] = useState('');
  const [vmName, setVmName] = useState('');
  const [error, setError] = useState<unknown>();
  const [created, setCreated] = useState<{ namespace: string; name: string }>();
  const [busy, setBusy] = useState(false);

  const namespaces = overview?.namespaces ?? [];
  const nsName = ns || namespaces[0]?.name || '';
  const nsView = namespaces.find((n) => n.name === nsName);
  const zoneName = zone || nsView?.zones[0]?.name || '';
  const candidates = useZoneVMs(nsName, zoneName);
  const unprotected = candidates?.vms.filter((v) => !v.group) ?? [];

  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const r = await post<{ namespace: string; name: string }>(
        `/api/namespaces/${encodeURIComponent(nsName)}/protectionrequests`,
        { vmName, vmNamespace, zone: zoneName, group },
      );
      setCreated(r);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <PageSection>
        <Title headingLevel="h1">Protect a virtual machine</Title>
      </PageSection>
      <PageSection>
        <Form onSubmit={submit} maxWidth="40rem">
          <FormGroup label="DR namespace" fieldId="protect-ns" isRequired>
            <FormSelect id="protect-ns" value={nsName} onChange={(_e, v) => setNs(v)}>
              {namespaces.map((n) => (
                <FormSelectOption key={n.name} value={n.name} label={n.name} />
              ))}
            </FormSelect>
          </FormGroup>
          <FormGroup label="Zone" fieldId="protect-zone" isRequired>
            <FormSelect id="protect-zone" value={zoneName} onChange={(_e, v) => setZone(v)}>
              {(nsView?.zones ?? []).map((z) => (
                <FormSelectOption key={z.name} value={z.name} label={z.displayName || z.name} />
              ))}
            </FormSelect>
          </FormGroup>
          <FormGroup label="Protection group" fieldId="protect-group" isRequired>
            <TextInput id="protect-group" value={group} onChange={(_e, v) => setGroup(v)} list="protect-groups" isRequired />
            <datalist id="protect-groups">
              {(nsView?.groups ?? []).map((g) => (
                <option key={g.name} value={g.name} />
              ))}
            </datalist>
            <FormHelperText>
              <HelperText>
                <HelperTextItem>An existing group, or the name of a new one.</HelperTextItem>
              </HelperText>
            </FormHelperText>
          </FormGroup>
          {candidates?.visible && (
            <FormGroup label={`VM on ${candidates.cluster}`} fieldId="protect-pick">
              <FormSelect
                id="protect-pick"
                value={vmNamespace && vmName ? `${vmNamespace}/${vmName}` : ''}
                onChange={(_e, v) => {
                  const [n, name] = v.split('/');
                  setVmNamespace(n ?? '');
                  setVmName(name ?? '');
                }}
              >
                <FormSelectOption value="" label={unprotected.length ? 'Pick a VM not yet protected' : 'Every VM is protected'} />
                {candidates.vms.map((v) => (
                  <FormSelectOption
                    key={`${v.namespace}/${v.name}`}
                    value={`${v.namespace}/${v.name}`}
                    label={v.group ? `${v.namespace}/${v.name} (in ${v.group})` : `${v.namespace}/${v.name}`}
                    isDisabled={!!v.group}
                  />
                ))}
              </FormSelect>
              <FormHelperText>
                <HelperText>
                  <HelperTextItem>
                    {candidates.vms.length} VMs on {candidates.cluster}, {unprotected.length} not protected yet. Pick one, or type
                    its namespace and name below.
                  </HelperTextItem>
                </HelperText>
              </FormHelperText>
            </FormGroup>
          )}
          <FormGroup label="VM namespace (on the primary)" fieldId="protect-vmns" isRequired>
            <TextInput id="protect-vmns" value={vmNamespace} onChange={(_e, v) => setVmNamespace(v)} isRequired />
          </FormGroup>
          <FormGroup label="VM name" fieldId="protect-vm" isRequired>
            <TextInput id="protect-vm" value={vmName} onChange={(_e, v) => setVmName(v)} isRequired />
            <FormHelperText>
              <HelperText>
                <HelperTextItem>
                  {candidates === undefined
                    ? 'Reading the VMs of the primary cluster…'
                    : candidates.visible
                      ? 'The name of a VirtualMachine on the primary cluster.'
                      : `The primary’s VMs are ${candidates.reason?.replace(/^not shown: /, 'not listed: ')}. Type the VM’s name.`}
                </HelperTextItem>
              </HelperText>
            </FormHelperText>
          </FormGroup>
          <Problem error={error} title="Protection request refused" />
          <ActionGroup>
            <Button type="submit" variant="primary" isLoading={busy} isDisabled={busy || !vmName || !vmNamespace || !group || !zoneName}>
              Protect
            </Button>
          </ActionGroup>
        </Form>
      </PageSection>
      {created && <Follow ns={created.namespace} name={created.name} />}
    </>
  );
}

// useZoneVMs reads the VMs of a zone's primary once per zone (a read of the
// workload cluster, so not on every change event).
function useZoneVMs(ns: string, zone: string): ZoneVMs | undefined {
  const [vms, setVms] = useState<ZoneVMs>();
  useEffect(() => {
    setVms(undefined);
    if (!ns || !zone) return;
    let live = true;
    get<ZoneVMs>(`/api/namespaces/${encodeURIComponent(ns)}/zones/${encodeURIComponent(zone)}/vms`)
      .then((v) => live && setVms(v))
      .catch((e: Error) => live && setVms({ cluster: '', visible: false, reason: `not shown: ${e.message}`, vms: [] }));
    return () => {
      live = false;
    };
  }, [ns, zone]);
  return vms;
}

function Follow({ ns, name }: { ns: string; name: string }) {
  const { data } = useLive<{ operations: OperationView[] }>('/api/operations');
  const op = useMemo(
    () => data?.operations.find((o) => o.kind === 'ProtectionRequest' && o.namespace === ns && o.name === name),
    [data, ns, name],
  );
  return (
    <PageSection aria-label="Protection progress">
      <Card>
        <CardTitle component="h2">
          ProtectionRequest {name} {op && <PhaseLabel phase={op.phase} finished={op.finished} succeeded={op.succeeded} />}
        </CardTitle>
        <CardBody>
          {op ? <Timeline op={op} /> : <Alert isInline isPlain variant="info" title="Created; waiting for its status." />}
          {op?.message && <p>{op.message}</p>}
        </CardBody>
      </Card>
    </PageSection>
  );
}
