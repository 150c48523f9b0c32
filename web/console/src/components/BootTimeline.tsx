import { Alert } from '@patternfly/react-core';
import { InnerScrollContainer, Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import type { BootRun, BootStageRun, OperationView } from '../api';
import { seconds, when } from '../format';
import { Tag } from './Tag';
import { VMs } from './BootPlan';

const BAR_W = 180;
const BAR_H = 14;

function PhaseTag({ phase }: { phase: string }) {
  switch (phase) {
    case 'Succeeded':
      return <Tag status="success">{phase}</Tag>;
    case 'TimedOut':
    case 'Failed':
      return <Tag status="danger">{phase}</Tag>;
    case 'Skipped':
    case 'Pending':
      return <Tag color="grey">{phase}</Tag>;
  }
  return <Tag status="info">{phase}</Tag>;
}

function barClass(phase: string): string {
  if (phase === 'Succeeded') return 'sr-boot__bar sr-m-success';
  if (phase === 'TimedOut' || phase === 'Failed') return 'sr-boot__bar sr-m-danger';
  return 'sr-boot__bar sr-m-info';
}

// Bar places a stage on the boot's time axis: where it started after the
// first stage began, and how long it took.
function Bar({ s, from, span }: { s: BootStageRun; from: number; span: number }) {
  if (!s.start || s.durationSeconds === undefined) {
    return <span>—</span>;
  }
  const offset = (Date.parse(s.start) - from) / 1000;
  const x = Math.min(Math.max((offset / span) * BAR_W, 0), BAR_W - 2);
  const w = Math.min(Math.max((s.durationSeconds / span) * BAR_W, 2), BAR_W - x);
  return (
    <svg
      className="sr-boot__axis"
      width={BAR_W}
      height={BAR_H}
      viewBox={`0 0 ${BAR_W} ${BAR_H}`}
      role="img"
      aria-label={`${s.name}: from ${seconds(offset)} to ${seconds(offset + s.durationSeconds)} after the boot began`}
    >
      <rect className="sr-boot__track" x={0} y={BAR_H / 2 - 1} width={BAR_W} height={2} />
      <rect className={barClass(s.phase)} x={x} y={1} width={w} height={BAR_H - 2} rx={2} />
    </svg>
  );
}

// span is the boot's length in seconds: from its first stage's start to the
// last end (or the longest stage under way).
function axis(b: BootRun): { from: number; span: number } {
  const starts = b.stages.filter((s) => s.start).map((s) => Date.parse(s.start as string));
  const from = starts.length ? Math.min(...starts) : b.start ? Date.parse(b.start) : 0;
  let to = from;
  for (const s of b.stages) {
    if (s.start && s.durationSeconds !== undefined) to = Math.max(to, Date.parse(s.start) + s.durationSeconds * 1000);
  }
  return { from, span: Math.max((to - from) / 1000, 1) };
}

// BootTimeline is how an operation's boot plan ran, stage by stage: phase,
// start, time taken (a failover's from its phaseTimings), the VMs still or
// never passing the gate, and why; a stopped plan says where and what to do.
export function BootTimeline({ op }: { op: OperationView }) {
  const b = op.boot;
  if (!b) return null;
  const { from, span } = axis(b);
  const where = op.kind === 'TestFailover' ? 'test VMs' : op.target ? `on ${op.target}` : 'on the target';
  return (
    <section className="sr-boot" aria-label={`Boot stages of ${op.name}`}>
      <h4 className="sr-boot__title">
        Boot stages ({where}){b.completion ? ` · ${seconds((Date.parse(b.completion) - from) / 1000)} in all` : ''}
      </h4>
      {b.stopped && (
        <Alert isInline variant="danger" title={`The boot plan stopped at stage ${b.stoppedAt ?? 'unknown'}`}>
          {b.notStarted && b.notStarted.length > 0 && <p>Not started: {b.notStarted.join(', ')}.</p>}
          {b.advice && <p>{b.advice}</p>}
        </Alert>
      )}
      <InnerScrollContainer>
        <Table aria-label={`Boot stages of ${op.name}`} variant="compact">
          <Thead>
            <Tr>
              <Th modifier="wrap">Stage</Th>
              <Th modifier="wrap">Phase</Th>
              <Th modifier="wrap">Started</Th>
              <Th modifier="wrap">Took</Th>
              <Th modifier="wrap">Timeline</Th>
              <Th modifier="wrap">Waiting</Th>
              <Th modifier="wrap">Message</Th>
            </Tr>
          </Thead>
          <Tbody>
            {b.stages.map((s) => (
              <Tr key={s.name}>
                <Td modifier="nowrap" dataLabel="Stage">
                  {s.name}
                </Td>
                <Td modifier="nowrap" dataLabel="Phase">
                  <PhaseTag phase={s.phase} />
                </Td>
                <Td modifier="nowrap" dataLabel="Started">
                  {when(s.start)}
                </Td>
                <Td modifier="nowrap" dataLabel="Took">
                  {s.durationSeconds === undefined ? '—' : seconds(s.durationSeconds)}
                </Td>
                <Td dataLabel="Timeline">
                  <Bar s={s} from={from} span={span} />
                </Td>
                <Td dataLabel="Waiting">{s.waiting?.length ? <VMs names={s.waiting} /> : '—'}</Td>
                <Td dataLabel="Message">{s.message || '—'}</Td>
              </Tr>
            ))}
          </Tbody>
        </Table>
      </InnerScrollContainer>
    </section>
  );
}
