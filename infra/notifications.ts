import { Annotations, type RemovalPolicy, SecretValue, Stack, Token } from "aws-cdk-lib";
import * as events from "aws-cdk-lib/aws-events";
import * as eventTargets from "aws-cdk-lib/aws-events-targets";
import * as sns from "aws-cdk-lib/aws-sns";
import * as subscriptions from "aws-cdk-lib/aws-sns-subscriptions";
import type * as sfn from "aws-cdk-lib/aws-stepfunctions";
import { Construct } from "constructs";
import { EVENT_SOURCE } from "../functions/config.ts";
import { formatProblem, type Problem, parseSources, readSourcesSync } from "../statemachine/index.ts";
import { type NotificationCatalog, resolveTrigger } from "../statemachine/notification-catalog.ts";
import { escapeFor, type MarkupFormat } from "../statemachine/notification-markup.ts";
import {
  CUSTOM_TRIGGER_EVENT,
  DEFAULT_TEMPLATES,
  NOTIFICATION_TRIGGERS,
  type NotificationSubscription,
  type NotificationSubscriptionInput,
  NotificationSubscriptionSchema,
  type NotificationTrigger,
  parseTemplate,
  TEMPLATE_FIELDS,
  type TemplateField,
  type TemplatePart,
} from "../statemachine/notifications.ts";
import { type DeadLetters, deadLetters } from "./dead-letters.ts";
import { acknowledge } from "./nag.ts";

/** A Slack incoming webhook (`https://hooks.slack.com/services/…`). */
export interface SlackService {
  readonly type: "slack";
  /**
   * The webhook's URL. It is a credential: give it as `SecretValue.secretsManager(...)` (a
   * CloudFormation dynamic reference, resolved at deploy time) rather than a plain string.
   */
  readonly webhookUrl: string | SecretValue;
}

/** A Microsoft Teams incoming webhook or Workflows ("Post to a channel when a webhook request is received") URL. */
export interface TeamsService {
  readonly type: "teams";
  /** The webhook's URL; a credential like Slack's (see {@link SlackService.webhookUrl}). */
  readonly webhookUrl: string | SecretValue;
}

/** Any HTTPS endpoint taking a JSON POST, with headers kept in Secrets Manager. */
export interface WebhookService {
  readonly type: "webhook";
  readonly url: string | SecretValue;
  /**
   * Headers sent with every call, their values from Secrets Manager
   * (`SecretValue.secretsManager("arn", { jsonField: "token" })`), e.g. `{ Authorization: … }`.
   * EventBridge keeps them in the connection's own secret.
   */
  readonly headers?: Readonly<Record<string, SecretValue>>;
}

/** Email through an SNS topic the controller creates, one per email service. */
export interface EmailService {
  readonly type: "email";
  /** Addresses subscribed to the topic (each confirms by the link SNS sends). */
  readonly addresses: readonly string[];
}

export type NotificationService = SlackService | TeamsService | WebhookService | EmailService;

/** Argo Notifications' services, templates and default subscriptions, for every rollout of a controller. */
export interface NotificationsProps {
  /** The services by name: the name subscriptions use (`…subscribe.on-rollout-aborted.<name>`). */
  readonly services: Readonly<Record<string, NotificationService>>;
  /**
   * The message of each trigger, with `{{.field}}`s from `TEMPLATE_FIELDS` (docs/notifications.md).
   * @default Argo's catalog messages (`DEFAULT_TEMPLATES`)
   */
  readonly templates?: Readonly<Partial<Record<NotificationTrigger, string>>>;
  /**
   * A YAML file holding Argo's `argo-rollouts-notification-configmap`: its custom triggers and
   * templates for every rollout of the controller (a ConfigMap among a rollout's spec files wins
   * key by key). docs/notifications.md, "Custom triggers and templates".
   */
  readonly configMapFile?: string;
  /** Subscriptions of every rollout, added to each rollout's own (its spec's and `addRollout`'s). */
  readonly subscriptions?: readonly NotificationSubscriptionInput[];
  /**
   * The email service whose topic each rollout's failed-executions alarm notifies.
   * @default the only email service when there is exactly one, else none
   */
  readonly alarmService?: string;
}

/** Slack's documented limit for an incoming webhook: one message per second. */
const WEBHOOK_RATE_PER_SECOND = 1;
const SERVICE_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,512}$/;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Problems of the `notifications` prop (empty: all good), each naming its path. */
export function notificationsProblems(props: NotificationsProps, embedded: boolean): string[] {
  const problems: string[] = [];
  const services = Object.entries(props.services ?? {});
  if (services.length === 0) problems.push("notifications.services: name at least one service");
  for (const [name, service] of services) {
    const at = `notifications.services.${name}`;
    if (!SERVICE_NAME.test(name))
      problems.push(`${at}: a service name is letters, digits, '-' and '_' (up to 64)`);
    switch (service?.type) {
      case "slack":
      case "teams":
        problems.push(...urlProblems(service.webhookUrl, `${at}.webhookUrl`, embedded));
        break;
      case "webhook":
        problems.push(...urlProblems(service.url, `${at}.url`, embedded));
        for (const [header, value] of Object.entries(service.headers ?? {})) {
          if (!HEADER_NAME.test(header)) problems.push(`${at}.headers: "${header}" is not a header name`);
          if (!SecretValue.isSecretValue(value))
            problems.push(`${at}.headers.${header}: give a SecretValue (from Secrets Manager), not a string`);
        }
        break;
      case "email":
        if (!Array.isArray(service.addresses) || service.addresses.length === 0)
          problems.push(`${at}.addresses: give at least one address`);
        for (const address of service.addresses ?? [])
          if (!Token.isUnresolved(address) && !EMAIL.test(address))
            problems.push(`${at}.addresses: "${address}" is not an email address`);
        break;
      default:
        problems.push(
          `${at}.type: ${JSON.stringify((service as { type?: unknown })?.type)} is not slack, teams, webhook or email`,
        );
    }
  }
  for (const [trigger, template] of Object.entries(props.templates ?? {})) {
    if (!Object.hasOwn(NOTIFICATION_TRIGGERS, trigger)) {
      problems.push(
        `notifications.templates: unknown trigger "${trigger}": use one of ${Object.keys(NOTIFICATION_TRIGGERS).join(", ")}`,
      );
      continue;
    }
    const parsed = parseTemplate(String(template));
    if ("problems" in parsed)
      problems.push(...parsed.problems.map((p) => `notifications.templates.${trigger}: ${p}`));
  }
  (props.subscriptions ?? []).forEach((s, i) => {
    problems.push(...subscriptionProblems(s, props, `notifications.subscriptions[${i}]`));
  });
  problems.push(...configMapCatalog(props.configMapFile).problems);
  if (
    props.alarmService !== undefined &&
    !(
      Object.hasOwn(props.services ?? {}, props.alarmService) &&
      props.services[props.alarmService]?.type === "email"
    )
  )
    problems.push(
      `notifications.alarmService: "${props.alarmService}" is not an email service of notifications.services`,
    );
  return problems;
}

/**
 * The catalog of `configMapFile`, read now (at synth time), or the problems: an unreadable file,
 * a bad ConfigMap, a file without one.
 */
export function configMapCatalog(file: string | undefined): {
  catalog?: NotificationCatalog;
  problems: string[];
} {
  if (file === undefined) return { problems: [] };
  const at = "notifications.configMapFile";
  const unreadable: Problem[] = [];
  const sources = readSourcesSync([file], unreadable);
  if (unreadable.length > 0) return { problems: unreadable.map((p) => `${at}: ${formatProblem(p)}`) };
  try {
    const { catalog } = parseSources(sources);
    if (!catalog) return { problems: [`${at}: ${file} holds no argo-rollouts-notification-configmap`] };
    return { catalog, problems: [] };
  } catch (error) {
    return { problems: [`${at}: ${(error as Error).message}`] };
  }
}

/** A subscription's problems: its shape, and a service the controller does not have. */
export function subscriptionProblems(
  subscription: NotificationSubscriptionInput,
  props: NotificationsProps | undefined,
  at: string,
): string[] {
  const parsed = NotificationSubscriptionSchema.safeParse(subscription);
  if (!parsed.success) return parsed.error.issues.map((i) => `${[at, ...i.path].join(".")}: ${i.message}`);
  if (!props)
    return [`${at}: the controller has no notifications (give RolloutControllerProps.notifications)`];
  if (!Object.hasOwn(props.services, parsed.data.service))
    return [
      `${at}.service: no service "${parsed.data.service}" in notifications.services (${Object.keys(props.services).join(", ")})`,
    ];
  return [];
}

function urlProblems(url: string | SecretValue, at: string, embedded: boolean): string[] {
  if (SecretValue.isSecretValue(url) || Token.isUnresolved(url)) return [];
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [`${at}: "${url}" is not a URL`];
  }
  const local = parsed.protocol === "http:" && ["127.0.0.1", "localhost", "[::1]"].includes(parsed.hostname);
  if (parsed.protocol === "https:" || (embedded && local)) return [];
  return [
    `${at}: "${parsed.protocol}//${parsed.host}…" must be https (EventBridge API destinations call HTTPS only${embedded ? "; http to this machine is accepted in the embedded runtime" : ""})`,
  ];
}

/** The endpoint, its connection and the role EventBridge calls it with. */
interface Destination {
  readonly service: SlackService | TeamsService | WebhookService;
  readonly apiDestination: events.ApiDestination;
}

/**
 * Argo Notifications on AWS: for each service an EventBridge API destination (Slack, Teams, a
 * webhook: a connection holding its headers, a rate limit) or an SNS topic (email), shared by the
 * controller's rollouts; for each rollout and subscription a rule on the lifecycle events of that
 * rollout whose targets build the service's JSON with an input transformer. What could not be
 * delivered after EventBridge's retries waits in a dead-letter queue with an alarm.
 */
export class Notifications extends Construct {
  readonly #props: NotificationsProps;
  readonly #eventBus: events.IEventBus;
  readonly #destinations = new Map<string, Destination>();
  readonly #topics = new Map<string, sns.Topic>();
  /** Deliveries EventBridge gave up on (an endpoint down for a day, a refused message). */
  readonly deadLetters: DeadLetters;
  /** The custom triggers and templates of `configMapFile`, for every rollout. */
  readonly catalog: NotificationCatalog | undefined;

  constructor(
    scope: Construct,
    id: string,
    options: { props: NotificationsProps; eventBus: events.IEventBus; removalPolicy: RemovalPolicy },
  ) {
    super(scope, id);
    this.#props = options.props;
    this.#eventBus = options.eventBus;
    this.catalog = configMapCatalog(options.props.configMapFile).catalog;
    this.deadLetters = deadLetters(this, "DeadLetters", {
      what: "notifications (Slack, Teams, webhook, email)",
      removalPolicy: options.removalPolicy,
    });
    for (const [name, service] of Object.entries(options.props.services)) {
      if (service.type === "email") this.#topics.set(name, this.#emailTopic(name, service));
      else this.#destinations.set(name, { service, apiDestination: this.#apiDestination(name, service) });
    }
  }

  /** The topic of the alarm service (`alarmService`, or the only email service). */
  get alarmTopic(): sns.ITopic | undefined {
    const name =
      this.#props.alarmService ?? (this.#topics.size === 1 ? [...this.#topics.keys()][0] : undefined);
    return name === undefined ? undefined : this.#topics.get(name);
  }

  /** The SNS topic of an email service. */
  topic(service: string): sns.ITopic | undefined {
    return this.#topics.get(service);
  }

  /** The API destination of a Slack, Teams or webhook service. */
  apiDestination(service: string): events.ApiDestination | undefined {
    return this.#destinations.get(service)?.apiDestination;
  }

  /**
   * One rule per trigger and service of a rollout: the rollout's lifecycle event → the service,
   * with the trigger's template. Subscriptions naming the same trigger and service are merged. A
   * custom trigger of the notification ConfigMap (`catalog`) gets one rule per condition, on the
   * `NotificationTriggered` event Begin publishes when its `when` holds; a trigger neither built in
   * nor in the catalog gets none (a synth warning), as Argo's controller ignores it.
   */
  subscribe(
    scope: Construct,
    rollout: string,
    stateMachine: sfn.StateMachine,
    list: readonly NotificationSubscription[],
    catalog?: NotificationCatalog,
  ): events.Rule[] {
    const stack = Stack.of(this);
    const constants: Record<string, string> = {
      stateMachineArn: stateMachine.stateMachineArn,
      consoleUrl: `https://${stack.region}.console.aws.amazon.com/states/home?region=${stack.region}#/statemachines/view/${stateMachine.stateMachineArn}`,
    };
    const rules: events.Rule[] = [];
    for (const s of this.#merged(list)) {
      const resolved = resolveTrigger(s.trigger, catalog);
      const id = `Notify${pascal(s.trigger)}${pascal(s.service)}`;
      if (resolved.kind === "unknown") {
        Annotations.of(scope).addWarningV2(
          "sfn-rollouts:notificationUnknownTrigger",
          `${s.trigger}.${s.service}: trigger "${s.trigger}" is neither built in nor in the argo-rollouts-notification-configmap: the subscription is ignored`,
        );
        continue;
      }
      if (resolved.kind === "built-in") {
        const trigger = s.trigger as NotificationTrigger;
        const template = this.#props.templates?.[trigger] ?? resolved.message ?? DEFAULT_TEMPLATES[trigger];
        const pattern = { detailType: [NOTIFICATION_TRIGGERS[trigger]], detail: { rollout: [rollout] } };
        const rule = this.#rule(scope, id, rollout, s, pattern, template, constants);
        if (rule) rules.push(rule);
        continue;
      }
      resolved.conditions.forEach((condition, i) => {
        const pattern = {
          detailType: [CUSTOM_TRIGGER_EVENT],
          detail: { rollout: [rollout], trigger: [s.trigger], condition: [i] },
        };
        const ruleId = resolved.conditions.length > 1 ? `${id}${i}` : id;
        const rule = this.#rule(scope, ruleId, rollout, s, pattern, condition.message, constants);
        if (rule) rules.push(rule);
      });
    }
    return rules;
  }

  /** The rollout's subscriptions with the controller's, one per trigger and service, recipients merged. */
  #merged(list: readonly NotificationSubscription[]): NotificationSubscription[] {
    const merged = new Map<string, NotificationSubscription>();
    for (const s of [
      ...list,
      ...(this.#props.subscriptions ?? []).map((s) => NotificationSubscriptionSchema.parse(s)),
    ]) {
      const key = `${s.trigger} ${s.service}`;
      const before = merged.get(key);
      merged.set(key, {
        ...s,
        recipients: [...new Set([...(before?.recipients ?? []), ...s.recipients])],
      });
    }
    return [...merged.values()];
  }

  /** One rule: events matching `pattern` → the subscription's service, with `template` as its message. */
  #rule(
    scope: Construct,
    id: string,
    rollout: string,
    s: NotificationSubscription,
    pattern: { detailType: string[]; detail: Record<string, unknown[]> },
    template: string,
    constants: Readonly<Record<string, string>>,
  ): events.Rule | undefined {
    if (!Object.hasOwn(this.#props.services, s.service)) return undefined;
    const service = this.#props.services[s.service];
    if (!service) return undefined;
    const parsed = parseTemplate(template);
    if ("problems" in parsed) return undefined; // refused with the props
    const text = render(parsed.parts, { ...constants, trigger: s.trigger }, markupOf(service.type));
    const rule = new events.Rule(scope, id, {
      eventBus: this.#eventBus,
      description: `${s.trigger} of rollout ${rollout} → ${s.service} (${service.type})`,
      eventPattern: { source: [EVENT_SOURCE], ...pattern },
    });
    const common = { deadLetterQueue: this.deadLetters.queue, retryAttempts: 185 } as const;
    if (service.type === "email") {
      const topic = this.#topics.get(s.service) as sns.Topic;
      rule.addTarget(
        new eventTargets.SnsTopic(topic, {
          ...common,
          message: events.RuleTargetInput.fromText(`${text}\n\n${constants.consoleUrl}`),
        }),
      );
      if (s.recipients.length > 0) ignoredRecipients(scope, s);
      return rule;
    }
    const destination = this.#destinations.get(s.service) as Destination;
    const channels: (string | undefined)[] =
      service.type === "slack" && s.recipients.length > 0 ? s.recipients : [undefined];
    if (service.type !== "slack" && s.recipients.length > 0) ignoredRecipients(scope, s);
    for (const channel of channels) {
      rule.addTarget(
        new eventTargets.ApiDestination(destination.apiDestination, {
          ...common,
          event: events.RuleTargetInput.fromObject(
            body(service.type, text, s.trigger, constants.consoleUrl as string, channel),
          ),
        }),
      );
    }
    return rule;
  }

  #apiDestination(
    name: string,
    service: SlackService | TeamsService | WebhookService,
  ): events.ApiDestination {
    const url = service.type === "webhook" ? service.url : service.webhookUrl;
    const headers = service.type === "webhook" ? Object.entries(service.headers ?? {}) : [];
    const [first, ...rest] = headers;
    // A connection needs an authorization; Slack and Teams take none (the URL is the credential),
    // so they get a constant header naming the sender, which they ignore.
    const authorization = first
      ? events.Authorization.apiKey(first[0], first[1])
      : events.Authorization.apiKey("x-sfn-rollouts", SecretValue.unsafePlainText("notification"));
    const connection = new events.Connection(this, `${pascal(name)}Connection`, {
      description: `sfn-rollouts notifications: ${name} (${service.type})`,
      authorization,
      ...(rest.length > 0
        ? {
            headerParameters: Object.fromEntries(
              rest.map(([k, v]) => [k, events.HttpParameter.fromSecret(v)]),
            ),
          }
        : {}),
    });
    return new events.ApiDestination(this, `${pascal(name)}Destination`, {
      description: `sfn-rollouts notifications: ${name} (${service.type})`,
      connection,
      endpoint: SecretValue.isSecretValue(url) ? url.unsafeUnwrap() : url,
      httpMethod: events.HttpMethod.POST,
      rateLimitPerSecond: WEBHOOK_RATE_PER_SECOND,
    });
  }

  #emailTopic(name: string, service: EmailService): sns.Topic {
    const topic = new sns.Topic(this, `${pascal(name)}Topic`, {
      displayName: `sfn-rollouts ${name}`,
      enforceSSL: true,
    });
    for (const address of service.addresses)
      topic.addSubscription(new subscriptions.EmailSubscription(address));
    acknowledge(
      topic,
      "AwsSolutions-SNS2",
      "rollout notifications carry no secrets; EventBridge and CloudWatch alarms cannot publish to a topic encrypted with the AWS-managed key, and a customer key for email text is not worth its cost",
    );
    return topic;
  }
}

function ignoredRecipients(scope: Construct, s: NotificationSubscription): void {
  Annotations.of(scope).addWarningV2(
    "sfn-rollouts:notificationRecipients",
    `${s.trigger}.${s.service}: recipients ${s.recipients.join(";")} are ignored: only Slack sends to channels; other services send where their settings say`,
  );
}

/** The markup a service reads its text as: Slack's mrkdwn, Teams' Markdown; none for a webhook or email. */
function markupOf(type: NotificationService["type"]): MarkupFormat | undefined {
  return type === "slack" || type === "teams" ? type : undefined;
}

/**
 * A template's parts as one string: the template's own text as the operator wrote it, fields as
 * EventBridge placeholders, constants as their value. For a markup format every value is escaped
 * by its rules (a field through its escaped copy in the event), so only the template's text can
 * mention or link.
 */
function render(
  parts: readonly TemplatePart[],
  constants: Readonly<Record<string, string>>,
  markup: MarkupFormat | undefined,
): string {
  return parts
    .map((part) => {
      if ("text" in part) return part.text;
      const source: (typeof TEMPLATE_FIELDS)[TemplateField] = TEMPLATE_FIELDS[part.field];
      if ("constant" in source) {
        const value = constants[source.constant] ?? "";
        // A token (an ARN resolved at deploy) is left whole: its text has none of the markup's characters.
        return markup === undefined || Token.isUnresolved(value) ? value : (escapeFor(markup, value) ?? "");
      }
      const escaped = markup !== undefined && "escaped" in source ? source.escaped : undefined;
      return events.EventField.fromPath(
        escaped === undefined ? source.path : `$.detail.escaped.${markup}.${escaped}`,
      );
    })
    .join("");
}

/** The JSON each kind of service takes. */
function body(
  type: "slack" | "teams" | "webhook",
  text: string,
  trigger: string,
  consoleUrl: string,
  channel: string | undefined,
): Record<string, unknown> {
  const link = "Open in Step Functions";
  switch (type) {
    case "slack":
      return {
        text,
        blocks: [
          // verbatim: Slack links and mentions only what the text marks up (`<…>`), never a bare
          // `@here` or `#channel` a value carries.
          { type: "section", text: { type: "mrkdwn", text, verbatim: true } },
          {
            type: "actions",
            elements: [{ type: "button", text: { type: "plain_text", text: link }, url: consoleUrl }],
          },
        ],
        ...(channel === undefined ? {} : { channel }),
      };
    case "teams":
      return {
        type: "message",
        attachments: [
          {
            contentType: "application/vnd.microsoft.card.adaptive",
            content: {
              $schema: "http://adaptivecards.io/schemas/adaptive-card.json",
              type: "AdaptiveCard",
              version: "1.4",
              body: [{ type: "TextBlock", text, wrap: true }],
              actions: [{ type: "Action.OpenUrl", title: link, url: consoleUrl }],
            },
          },
        ],
      };
    case "webhook":
      return {
        trigger,
        event: events.EventField.fromPath("$.detail-type"),
        message: text,
        rollout: events.EventField.fromPath("$.detail.rollout"),
        consoleUrl,
        detail: events.EventField.fromPath("$.detail"),
      };
  }
}

const pascal = (s: string) =>
  s
    .split(/[-_]/)
    .map((p) => p.charAt(0).toUpperCase() + p.slice(1))
    .join("");
