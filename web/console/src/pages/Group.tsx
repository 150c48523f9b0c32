import { useState } from 'react';
import {
  Alert,
  Breadcrumb,
  BreadcrumbItem,
  Button,
  Card,
  CardBody,
  CardTitle,
  DescriptionList,
  DescriptionListDescription,
  DescriptionListGroup,
  DescriptionListTerm,
  Flex,
  FlexItem,
  PageSection,
  Spinner,
  Title,
} from '@patternfly/react-core';
import { InnerScrollContainer, Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import type { GroupDetail, VMState } from '../api';
import { HealthLabel, PhaseLabel, Reachable } from '../components/Badges';
import { Tag } from '../components/Tag';
import { LagBar } from '../components/LagBar';
import { Problem } from '../components/Problem';
import { Timeline } from '../components/Timeline';
import { BootPlan } from '../components/BootPlan';
import { BootTimeline } from '../components/BootTimeline';
import { Consistency, Drills } from '../components/Plans';
import { bytes, seconds, when } from '../format';
import { useLive } from '../live';
import { LagChart } from '../components/LagChart';
import { navigate } from '../router';
import { FailoverModal } from './FailoverModal';
import { TestFailoverModal } from './TestFailoverModal';

export function Group({ ns, name }: { ns: string; name: string }) {
  const path = `/api/namespaces/${encodeURIComponent(ns)}/groups/${encodeURIComponent(name)}`;
  const { data, error, loading } = useLive<GroupDetail>(path);
  const [modal, setModal] = useState<'planned' | 'unplanned' | 'test' | null>(null);

  if (loading && !data) return <Spinner aria-label="Loading the group" />;
  if (!data) {
    return (
      <PageSection>
        <Problem error={error} title={`Could not read ${ns}/${name}`} />
      </PageSection>
    );
  }
  const g = data.group;
  const clusters = (data.zone?.clusters ?? []).map((c) => c.name);
  const running = data.operations.find((o) => !o.finished && o.kind !== 'ProtectionRequest');
  return (
    <>
      <PageSection>
        <Breadcrumb>
          <BreadcrumbItem
            to="/"
            onClick={(e) => {
              e.preventDefault();
              navigate('/');
            }}
          >
            Overview
          </BreadcrumbItem>
          <BreadcrumbItem isActive>
            {ns}/{name}
          </BreadcrumbItem>
        </Breadcrumb>
        <Flex justifyContent={{ default: 'justifyContentSpaceBetween' }} alignItems={{ default: 'alignItemsCenter' }}>
          <FlexItem>
            <Title headingLevel="h1">
              Group {g.name} {g.testActive && <Tag color="purple">test active</Tag>}{' '}
              {g.atRisk && <Tag status="danger">at risk</Tag>}
            </Title>
          </FlexItem>
          <FlexItem>
            <Flex>
              <Button variant="primary" onClick={() => setModal('planned')}>
                Planned failover
              </Button>
              <Button variant="danger" onClick={() => setModal('unplanned')}>
                Unplanned failover
              </Button>
              <Button variant="secondary" onClick={() => setModal('test')}>
                Test failover
              </Button>
              <Button
                variant="tertiary"
                onClick={() =>
                  navigate(`/protect?ns=${encodeURIComponent(ns)}&group=${encodeURIComponent(name)}&zone=${encodeURIComponent(g.zone ?? '')}`)
                }
              >
                Protect a VM
              </Button>
            </Flex>
          </FlexItem>
        </Flex>
        {data.notes?.map((n) => <Alert key={n} isInline isPlain variant="info" title={n} />)}
      </PageSection>
      <PageSection>
        <DescriptionList isHorizontal columnModifier={{ lg: '2Col' }} aria-label="Group summary">
          <Item term="Active cluster">{g.activeCluster || '—'}</Item>
          <Item term="Zone">{g.zone || '—'}</Item>
          <Item term="Virtual machines">{g.vms}</Item>
          <Item term="Replication">
            <HealthLabel health={g.health} /> {g.failoverReady ? 'ready to fail over' : 'not ready to fail over'}
          </Item>
          <Item term="RPO lag">
            <LagBar group={g} />
          </Item>
          <Item term="State">{g.state || '—'}</Item>
        </DescriptionList>
      </PageSection>
      <PageSection aria-label="Lag history">
        <Title headingLevel="h2">Lag over the last 6 hours</Title>
        <LagChart ns={g.namespace} name={g.name} current={g.lagSeconds} />
      </PageSection>
      {running && (
        <PageSection aria-label="Running operation">
          <Card>
            <CardTitle component="h2">
              {running.kind === 'TestFailover' ? 'Test failover' : 'Failover'} {running.name} in progress
            </CardTitle>
            <CardBody>
              <Timeline op={running} />
              <BootTimeline op={running} />
            </CardBody>
          </Card>
        </PageSection>
      )}
      <PageSection>
        <Title headingLevel="h2">Sites</Title>
        <Table aria-label="Sites" variant="compact">
          <Thead>
            <Tr>
              <Th modifier="wrap">Cluster</Th>
              <Th modifier="wrap">Role</Th>
              <Th modifier="wrap">Reachability</Th>
              <Th modifier="wrap">Group state</Th>
              <Th modifier="wrap">In sync</Th>
              <Th modifier="wrap">Last sync</Th>
            </Tr>
          </Thead>
          <Tbody>
            {(data.zone?.clusters ?? []).map((c) => {
              const site = data.sites.find((s) => s.cluster === c.name);
              return (
                <Tr key={c.name}>
                  <Td dataLabel="Cluster">
                    {c.name} {c.name === g.activeCluster && <Tag color="blue">active</Tag>}
                  </Td>
                  <Td dataLabel="Role">{c.role}</Td>
                  <Td dataLabel="Reachability">
                    <Reachable reachable={c.reachable} />
                  </Td>
                  <Td dataLabel="Group state">{site?.currentState ?? '—'}</Td>
                  <Td dataLabel="In sync">{site ? (site.inSync ? 'yes' : 'no') : '—'}</Td>
                  <Td dataLabel="Last sync">{when(site?.lastSyncTime)}</Td>
                </Tr>
              );
            })}
          </Tbody>
        </Table>
      </PageSection>
      <PageSection>
        <Title headingLevel="h2">Virtual machines and replication</Title>
        {/* Names and figures stay on one line (a VM's name broken at its
            hyphen reads as two); a state that says why it is unknown wraps.
            When the columns still do not fit, the table scrolls sideways. */}
        <InnerScrollContainer>
          <Table aria-label="Virtual machines" variant="compact">
            <Thead>
              <Tr>
                <Th modifier="wrap">VM</Th>
                <Th modifier="wrap">Runs on</Th>
                {clusters.map((c) => (
                  <Th key={c} modifier="wrap">On {c}</Th>
                ))}
                <Th modifier="wrap">Volume</Th>
                <Th modifier="wrap">Connection</Th>
                <Th modifier="wrap">Disk / peer disk</Th>
                <Th modifier="wrap">In sync</Th>
                <Th modifier="wrap">Out of sync</Th>
                <Th modifier="wrap">Lag</Th>
              </Tr>
            </Thead>
            <Tbody>
              {data.members.flatMap((m) => {
                const states = clusters.map((c) => vmOn(data, c, m));
                const runsOn = clusters.filter((_c, i) => states[i]?.printableStatus === 'Running');
                const rep = data.replication.find((r) => r.name === m.name && r.namespace === m.namespace);
                const vols = rep?.volumes?.length ? rep.volumes : [undefined];
                return vols.map((v, i) => (
                  <Tr key={`${m.namespace}/${m.name}/${i}`}>
                    <Td modifier="nowrap" dataLabel="VM">{i === 0 ? `${m.namespace}/${m.name}` : ''}</Td>
                    <Td modifier="nowrap" dataLabel="Runs on">{i === 0 ? runsOn.join(', ') || 'nowhere' : ''}</Td>
                    {clusters.map((c, j) => (
                      <Td key={c} dataLabel={`On ${c}`}>
                        {i === 0 ? vmStateText(states[j], data, c) : ''}
                      </Td>
                    ))}
                    <Td modifier="nowrap" dataLabel="Volume">{v ? v.volume : '—'}</Td>
                    <Td modifier="nowrap" dataLabel="Connection">{v?.connectionState ?? '—'}</Td>
                    <Td modifier="nowrap" dataLabel="Disk / peer disk">{v ? `${v.diskState ?? '?'} / ${v.peerDiskState ?? '?'}` : '—'}</Td>
                    <Td modifier="nowrap" dataLabel="In sync">{v?.percentInSync ? `${v.percentInSync} %` : '—'}</Td>
                    <Td modifier="nowrap" dataLabel="Out of sync">{v ? bytes(v.outOfSyncBytes) : '—'}</Td>
                    <Td modifier="nowrap" dataLabel="Lag">{v ? seconds(v.lagSeconds) : '—'}</Td>
                  </Tr>
                ));
              })}
            </Tbody>
          </Table>
        </InnerScrollContainer>
      </PageSection>
      <PageSection aria-label="Boot plan of the group">
        <Title headingLevel="h2">Boot plan</Title>
        {data.boot ? (
          <BootPlan plan={data.boot} />
        ) : (
          <p>No boot plan: wherever the group starts, its VMs start at once (spec.boot orders them).</p>
        )}
      </PageSection>
      <PageSection aria-label="Drills of the group">
        <Title headingLevel="h2">Drills</Title>
        <Drills group={g.name} drill={data.drill} />
      </PageSection>
      <PageSection aria-label="Consistency of the group's points">
        <Title headingLevel="h2">Consistency</Title>
        <Consistency c={data.consistency} />
      </PageSection>
      {data.rpoEvents.length > 0 && (
        <PageSection>
          <Title headingLevel="h2">RPO events</Title>
          <Table aria-label="RPO events" variant="compact">
            <Thead>
              <Tr>
                <Th modifier="wrap">Event</Th>
                <Th modifier="wrap">State</Th>
                <Th modifier="wrap">Start</Th>
                <Th modifier="wrap">End</Th>
                <Th modifier="wrap">Peak lag</Th>
              </Tr>
            </Thead>
            <Tbody>
              {data.rpoEvents.map((e) => (
                <Tr key={e.name}>
                  <Td dataLabel="Event">{e.name}</Td>
                  <Td dataLabel="State">{e.state}</Td>
                  <Td dataLabel="Start">{when(e.start)}</Td>
                  <Td dataLabel="End">{when(e.end)}</Td>
                  <Td dataLabel="Peak lag">{seconds(e.peakLagSeconds)}</Td>
                </Tr>
              ))}
            </Tbody>
          </Table>
        </PageSection>
      )}
      <PageSection>
        <Title headingLevel="h2">Operations</Title>
        {data.operations.length === 0 && <p>No operations on this group yet.</p>}
        <Flex direction={{ default: 'column' }}>
          {data.operations.map((o) => (
            <Card key={o.kind + o.name} isCompact>
              <CardTitle component="h3">
                {o.kind} {o.name} <PhaseLabel phase={o.phase} finished={o.finished} succeeded={o.succeeded} />{' '}
                <small>
                  {o.type} {o.target ? `→ ${o.target}` : ''} · by {o.createdBy || 'unknown'} · {seconds(o.durationSeconds)}
                </small>
              </CardTitle>
              <CardBody>
                <Timeline op={o} />
                {o.message && <p>{o.message}</p>}
                <BootTimeline op={o} />
                {o.checks && o.checks.length > 0 && (
                  <ul aria-label={`Check results of ${o.name}`}>
                    {o.checks.map((c) => (
                      <li key={c.vm + c.check}>
                        {c.passed ? '✔ passed' : '✘ failed'}: {c.vm} {c.check} {c.message}
                      </li>
                    ))}
                  </ul>
                )}
              </CardBody>
            </Card>
          ))}
        </Flex>
      </PageSection>
      {(modal === 'planned' || modal === 'unplanned') && (
        <FailoverModal detail={data} type={modal} onClose={() => setModal(null)} />
      )}
      {modal === 'test' && <TestFailoverModal detail={data} onClose={() => setModal(null)} />}
    </>
  );
}

function Item({ term, children }: { term: string; children: React.ReactNode }) {
  return (
    <DescriptionListGroup>
      <DescriptionListTerm>{term}</DescriptionListTerm>
      <DescriptionListDescription>{children}</DescriptionListDescription>
    </DescriptionListGroup>
  );
}

// vmOn is a VM's state on a cluster, as the cluster's workload copy of the
// group reports it through the quorum-side status.
function vmOn(data: GroupDetail, cluster: string, m: { name: string; namespace: string }): VMState | undefined {
  return data.sites
    .find((s) => s.cluster === cluster)
    ?.virtualMachines?.find((v) => v.name === m.name && v.namespace === m.namespace);
}

function vmStateText(st: VMState | undefined, data: GroupDetail, cluster: string): string {
  if (st) return st.printableStatus ? st.printableStatus + (st.message ? ` (${st.message})` : '') : 'reported, no status';
  const site = data.sites.find((s) => s.cluster === cluster);
  if (!site) return 'not reported';
  return site.currentState ? 'not on this cluster' : 'unknown: the cluster was not read';
}
