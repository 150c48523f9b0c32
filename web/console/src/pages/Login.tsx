import { useState } from 'react';
import {
  ActionGroup,
  Alert,
  Bullseye,
  Button,
  Card,
  CardBody,
  CardTitle,
  Content,
  Form,
  FormGroup,
  FormHelperText,
  HelperText,
  HelperTextItem,
  TextArea,
} from '@patternfly/react-core';
import { HttpError, post, SessionInfo } from '../api';

// Login takes a bearer token the quorum API server accepts: a ServiceAccount
// token, a user's token, or an OIDC ID token. The server keeps it; the page
// forgets it as soon as it is sent.
export function Login({ onSignedIn }: { onSignedIn: (s: SessionInfo) => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const s = await post<SessionInfo>('/api/login', { token });
      setToken('');
      onSignedIn(s);
    } catch (err) {
      setError((err as HttpError).body?.message ?? 'Sign-in failed');
    } finally {
      setBusy(false);
    }
  };

  return (
    <Bullseye className="sr-login">
      <Card className="sr-login-card">
        <CardTitle component="h1">Site Recovery console</CardTitle>
        <CardBody>
          <Content component="p">
            Sign in with a Kubernetes bearer token of the quorum cluster. Every action you take is made with it, so
            your RBAC role decides what you can see and do.
          </Content>
          <Form onSubmit={submit}>
            {error && <Alert variant="danger" isInline title={error} />}
            <FormGroup label="Bearer token" isRequired fieldId="token">
              <TextArea
                id="token"
                name="token"
                value={token}
                onChange={(_e, v) => setToken(v)}
                isRequired
                autoComplete="off"
                spellCheck={false}
                resizeOrientation="vertical"
                rows={4}
                aria-describedby="token-help"
              />
              <FormHelperText>
                <HelperText id="token-help">
                  <HelperTextItem>For example: kubectl create token my-user -n my-dr-namespace</HelperTextItem>
                </HelperText>
              </FormHelperText>
            </FormGroup>
            <ActionGroup>
              <Button type="submit" variant="primary" isLoading={busy} isDisabled={busy || !token.trim()}>
                Sign in
              </Button>
            </ActionGroup>
          </Form>
        </CardBody>
      </Card>
    </Bullseye>
  );
}
