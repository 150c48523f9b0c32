import { Tag } from './Tag';

export function HealthLabel({ health }: { health: string }) {
  switch (health) {
    case 'Healthy':
      return <Tag status="success">Healthy</Tag>;
    case 'Syncing':
      return <Tag status="info">Syncing</Tag>;
    case 'Degraded':
      return <Tag status="warning">Degraded</Tag>;
    case 'Disconnected':
      return <Tag status="danger">Disconnected</Tag>;
  }
  return <Tag color="grey">{health || 'Unknown'}</Tag>;
}

export function PhaseLabel({ phase, finished, succeeded }: { phase: string; finished: boolean; succeeded: boolean }) {
  if (finished && succeeded) return <Tag status="success">{phase}</Tag>;
  if (finished) return <Tag status="danger">{phase}</Tag>;
  return <Tag status="info">{phase}</Tag>;
}

export function Reachable({ reachable }: { reachable?: boolean }) {
  if (reachable === undefined) return <Tag color="grey">not probed</Tag>;
  return reachable ? <Tag status="success">reachable</Tag> : <Tag status="danger">unreachable</Tag>;
}
