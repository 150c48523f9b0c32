import { useEffect } from 'react';
import {
  Alert,
  Button,
  Card,
  CardBody,
  CardTitle,
  EmptyState,
  EmptyStateBody,
  Flex,
  FlexItem,
  Gallery,
  Label,
  PageSection,
  Spinner,
  Title,
} from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import type { NamespaceView, Overview as OverviewData } from '../api';
import { HealthLabel, PhaseLabel, Reachable } from '../components/Badges';
import { LagBar } from '../components/LagBar';
import { Problem } from '../components/Problem';
import { groupPath, seconds, when } from '../format';
import { useLive } from '../live';
import { navigate } from '../router';

export function Overview() {
  const { data, error, loading } = useLive<OverviewData>('/api/overview');
  useEffect(() => {
    if (data) {
      // The browser test measures how long the first full render takes.
      performance.mark('overview-rendered');
      document.body.dataset.overviewRendered = 'true';
    }
  }, [data]);
  if (loading && !data) return <Spinner aria-label="Loading the overview" />;
  return (
    <>
      <PageSection>
        <Title headingLevel="h1">Overview</Title>
      </PageSection>
      <PageSection>
        <Problem error={error} title="Could not read the overview" />
        {data && <Summary data={data} />}
      </PageSection>
      {data && data.namespaces.length === 0 && (
        <PageSection>
          <EmptyState titleText="No DR namespace visible" headingLevel="h2">
            <EmptyStateBody>
              Your Kubernetes role does not let you list ProtectionZones in any DR namespace. Ask for a viewer role in
              the namespaces you look after.
            </EmptyStateBody>
          </EmptyState>
        </PageSection>
      )}
      {data?.namespaces.map((ns) => <Namespace key={ns.name} ns={ns} />)}
    </>
  );
}

function Summary({ data }: { data: OverviewData }) {
  const s = data.summary;
  const items: [string, number, boolean][] = [
    ['Protected VMs', s.protectedVMs, false],
    ['Protection groups', s.groups, false],
    ['Groups at risk', s.groupsAtRisk, s.groupsAtRisk > 0],
    ['Open RPO events', s.openRPOEvents, s.openRPOEvents > 0],
    ['Unfinished requests', s.unfinishedRequests, false],
  ];
  return (
    <Gallery hasGutter minWidths={{ default: '12rem' }} className="sr-summary" aria-label="Summary">
      {items.map(([title, n, bad]) => (
        <Card key={title} isCompact>
          <CardTitle component="h2">{title}</CardTitle>
          <CardBody>
            {n} {bad && <Label status="danger">attention</Label>}
          </CardBody>
        </Card>
      ))}
    </Gallery>
  );
}

function Namespace({ ns }: { ns: NamespaceView }) {
  return (
    <PageSection aria-labelledby={`ns-${ns.name}`}>
      <Title headingLevel="h2" id={`ns-${ns.name}`}>
        Namespace {ns.name}
      </Title>
      {ns.hidden?.map((h) => <Alert key={h} isInline isPlain variant="info" title={h} />)}
      <Flex direction={{ default: 'column' }} spaceItems={{ default: 'spaceItemsMd' }}>
        {ns.zones.map((z) => (
          <FlexItem key={z.name}>
            <Title headingLevel="h3">
              Zone {z.displayName || z.name} <Label color="blue">{z.backend}</Label>
            </Title>
            <Flex>
              {z.clusters.map((c) => (
                <FlexItem key={c.name}>
                  {c.name} ({c.role}) <Reachable reachable={c.reachable} />
                </FlexItem>
              ))}
            </Flex>
          </FlexItem>
        ))}
        <FlexItem>
          <Table aria-label={`Protection groups of ${ns.name}`} variant="compact">
            <Thead>
              <Tr>
                <Th>Group</Th>
                <Th>Active cluster</Th>
                <Th>VMs</Th>
                <Th>Replication</Th>
                <Th>RPO lag</Th>
                <Th>State</Th>
              </Tr>
            </Thead>
            <Tbody>
              {ns.groups.map((g) => (
                <Tr key={g.name}>
                  <Td dataLabel="Group">
                    <Button variant="link" isInline onClick={() => navigate(groupPath(g.namespace, g.name))}>
                      {g.name}
                    </Button>{' '}
                    {g.testActive && <Label color="purple">test active</Label>}{' '}
                    {g.atRisk && <Label status="danger">at risk</Label>}
                  </Td>
                  <Td dataLabel="Active cluster">{g.activeCluster || '—'}</Td>
                  <Td dataLabel="VMs">{g.vms}</Td>
                  <Td dataLabel="Replication">
                    <HealthLabel health={g.health} />
                  </Td>
                  <Td dataLabel="RPO lag">
                    <LagBar group={g} />
                  </Td>
                  <Td dataLabel="State">{g.state || '—'}</Td>
                </Tr>
              ))}
              {ns.groups.length === 0 && (
                <Tr>
                  <Td colSpan={6}>No protection groups yet.</Td>
                </Tr>
              )}
            </Tbody>
          </Table>
        </FlexItem>
        {ns.rpoEvents.length > 0 && (
          <FlexItem>
            <Title headingLevel="h3">Open RPO events</Title>
            {ns.rpoEvents.map((e) => (
              <Alert key={e.name} isInline variant="warning" title={`${e.group}: lag above ${seconds(e.objectiveSeconds)}`}>
                Since {when(e.start)}, peak {seconds(e.peakLagSeconds)}. {e.message}
              </Alert>
            ))}
          </FlexItem>
        )}
        {ns.unfinished.length > 0 && (
          <FlexItem>
            <Title headingLevel="h3">Unfinished requests</Title>
            <Table aria-label={`Unfinished requests of ${ns.name}`} variant="compact">
              <Thead>
                <Tr>
                  <Th>Request</Th>
                  <Th>Kind</Th>
                  <Th>Group</Th>
                  <Th>Phase</Th>
                </Tr>
              </Thead>
              <Tbody>
                {ns.unfinished.map((o) => (
                  <Tr key={o.kind + o.name}>
                    <Td dataLabel="Request">{o.name}</Td>
                    <Td dataLabel="Kind">{o.kind}</Td>
                    <Td dataLabel="Group">{o.group}</Td>
                    <Td dataLabel="Phase">
                      <PhaseLabel phase={o.phase} finished={o.finished} succeeded={o.succeeded} />
                    </Td>
                  </Tr>
                ))}
              </Tbody>
            </Table>
          </FlexItem>
        )}
      </Flex>
    </PageSection>
  );
}
