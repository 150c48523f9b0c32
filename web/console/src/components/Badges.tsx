import { Label } from '@patternfly/react-core';

export function HealthLabel({ health }: { health: string }) {
  switch (health) {
    case 'Healthy':
      return <Label status="success">Healthy</Label>;
    case 'Syncing':
      return <Label status="info">Syncing</Label>;
    case 'Degraded':
      return <Label status="warning">Degraded</Label>;
    case 'Disconnected':
      return <Label status="danger">Disconnected</Label>;
  }
  return <Label color="grey">{health || 'Unknown'}</Label>;
}

export function PhaseLabel({ phase, finished, succeeded }: { phase: string; finished: boolean; succeeded: boolean }) {
  if (finished && succeeded) return <Label status="success">{phase}</Label>;
  if (finished) return <Label status="danger">{phase}</Label>;
  return <Label status="info">{phase}</Label>;
}

export function Reachable({ reachable }: { reachable?: boolean }) {
  if (reachable === undefined) return <Label color="grey">not probed</Label>;
  return reachable ? <Label status="success">reachable</Label> : <Label status="danger">unreachable</Label>;
}
