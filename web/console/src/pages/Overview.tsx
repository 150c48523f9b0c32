import { useEffect, useRef } from 'react';
import {
  Alert,
  Card,
  CardBody,
  CardTitle,
  EmptyState,
  EmptyStateBody,
  Flex,
  FlexItem,
  Gallery,
  PageSection,
  Spinner,
  Title,
} from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import type { NamespaceView, Overview as OverviewData } from '../api';
import { PhaseLabel, Reachable } from '../components/Badges';
import { GroupTable } from '../components/GroupTable';
import { Problem } from '../components/Problem';
import { Tag } from '../components/Tag';
import { seconds, when } from '../format';
import { useLive } from '../live';

export function Overview() {
  const { data, error, loading } = useLive<OverviewData>('/api/overview');
  const marked = useRef(false);
  useEffect(() => {
    if (data && !marked.current) {
      // The browser test measures the first render with the data, and when
      // it was painted: a task queued from the next frame runs after it.
      marked.current = true;
      performance.mark('overview-rendered');
      requestAnimationFrame(() =>
        setTimeout(() => {
          performance.mark('overview-painted');
          document.body.dataset.overviewRendered = 'true';
        }),
      );
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
            {n} {bad && <Tag status="danger">attention</Tag>}
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
              Zone {z.displayName || z.name} <Tag color="blue">{z.backend}</Tag>
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
          <GroupTable namespace={ns.name} groups={ns.groups} />
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
                  <Th modifier="wrap">Request</Th>
                  <Th modifier="wrap">Kind</Th>
                  <Th modifier="wrap">Group</Th>
                  <Th modifier="wrap">Phase</Th>
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
