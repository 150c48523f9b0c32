import { Alert } from '@patternfly/react-core';
import { HttpError } from '../api';

// Problem explains a failed call in the user's terms; a 403 says plainly that
// Kubernetes RBAC does not allow it, with the API server's own message.
export function Problem({ error, title }: { error?: unknown; title?: string }) {
  if (!error) return null;
  const e = error as HttpError;
  if (e.status === 403) {
    return (
      <Alert isInline variant="danger" title={title ? `${title}: you may not` : 'You may not do this'}>
        {e.body?.reason === 'CSRF'
          ? 'The request lacked this session’s token; reload the page.'
          : 'Your Kubernetes role does not allow it. '}
        {e.body?.message}
      </Alert>
    );
  }
  return (
    <Alert isInline variant="danger" title={title ?? 'The request failed'}>
      {e.body?.message ?? String(error)}
    </Alert>
  );
}
