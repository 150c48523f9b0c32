import { useEffect, useState } from 'react';
import {
  ActionGroup,
  Alert,
  Bullseye,
  Button,
  Card,
  CardBody,
  CardTitle,
  Content,
  Divider,
  Form,
  FormGroup,
  FormHelperText,
  HelperText,
  HelperTextItem,
  TextArea,
} from '@patternfly/react-core';
import { get, HttpError, post, SessionInfo } from '../api';

interface LoginOptions {
  oidc: boolean;
}

// takeLoginError returns the reason a redirected sign-in failed, once: the
// address loses it, so a reload does not show it again.
function takeLoginError(): string | undefined {
  const q = new URLSearchParams(window.location.search);
  const e = q.get('login_error');
  if (e === null) return undefined;
  q.delete('login_error');
  const rest = q.toString();
  window.history.replaceState({}, '', window.location.pathname + (rest ? '?' + rest : ''));
  return e;
}

// Login takes a bearer token the quorum API server accepts: a ServiceAccount
// token, a user's token, or an OIDC ID token. The server keeps it; the page
// forgets it as soon as it is sent. When the console is configured with the
// cluster's OIDC issuer, it also offers to sign in there: the browser goes to
// the issuer and comes back signed in, never seeing a token.
export function Login({ onSignedIn }: { onSignedIn: (s: SessionInfo) => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | undefined>(takeLoginError);
  const [busy, setBusy] = useState(false);
  const [oidc, setOidc] = useState(false);

  useEffect(() => {
    get<LoginOptions>('/api/login/options')
      .then((o) => setOidc(o.oidc))
      .catch(() => setOidc(false));
  }, []);

  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const s = await post<SessionInfo>('/api/login', { token });
      setToken('');
      onSignedIn(s);
    } catch (err) {
      setError((err as HttpError).body?.message ?? 'The console could not be reached');
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
            {oidc
              ? "Sign in with the cluster's identity provider, or with a Kubernetes bearer token of the quorum cluster."
              : 'Sign in with a Kubernetes bearer token of the quorum cluster.'}{' '}
            Every action you take is made with that identity, so your RBAC role decides what you can see and do.
          </Content>
          {error && (
            <Alert variant="danger" isInline title="Sign-in failed" className="sr-login-error">
              {error}
            </Alert>
          )}
          {oidc && (
            <>
              <Button
                variant="primary"
                isBlock
                className="sr-login-oidc"
                onClick={() => window.location.assign('/api/oidc/login')}
              >
                Log in with OIDC
              </Button>
              <Divider className="sr-login-divider" />
              <Content component="p">Or paste a token:</Content>
            </>
          )}
          <Form onSubmit={submit}>
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
              <Button type="submit" variant={oidc ? 'secondary' : 'primary'} isLoading={busy} isDisabled={busy || !token.trim()}>
                Sign in
              </Button>
            </ActionGroup>
          </Form>
        </CardBody>
      </Card>
    </Bullseye>
  );
}
